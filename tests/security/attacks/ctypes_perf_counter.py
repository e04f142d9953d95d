"""Class: harness state reached from inside the runner (a C-level rewrite of
`time.perf_counter`'s method table).

Tries: the harness captured `time.perf_counter` at import and checks that the object is still
the same; so instead of replacing the object, overwrite the C function pointer in its PyMethodDef
(through ctypes) with a callback that runs the clock 100x slower. Same object, slower clock: host
timings shrink 100x. Its own answers are right. Expect: not PASSED with a gain.
"""
import ctypes
import time

import torch

try:
    _COST = int("__COST__")  # repeats of the honest computation (the tests make it a ~3 ms call)
except ValueError:
    _COST = 1


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


_mono = time.monotonic
_T0 = _mono()
_SIG = ctypes.CFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p)


def _slow_clock(_self, _unused):
    return _T0 + (_mono() - _T0) / 100.0


_CB = _SIG(_slow_clock)
try:
    ml = ctypes.c_void_p.from_address(id(time.perf_counter) + 16).value  # PyCFunctionObject.m_ml
    ctypes.c_void_p.from_address(ml + 8).value = ctypes.cast(_CB, ctypes.c_void_p).value  # ml_meth
    print("perf_counter rewritten at C level")
except Exception as e:  # noqa: BLE001
    print(f"denied: {type(e).__name__}: {e}")


def run(x, weight, eps):
    return _answer(x, weight, eps)
