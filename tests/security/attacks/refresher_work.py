"""Class: harness state reached from inside the runner (closures): moving the work into the input
refresher, outside the timed window.

Tries: find the timing loop's `prepare` closure on the heap and replace its `refresh` cell with a
wrapper that, right after the harness wrote the next call's inputs, computes the answer for them
and stashes it. The timed call then only hands the stash back: right answers, near-zero time.
Expect: not PASSED with a gain.
"""
import gc
import sys
import types

import torch

_stash = {}
_hooked = []


def _in_timing():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "_time_solution":
            return True
        f = f.f_back
    return False


try:
    _COST = int("__COST__")  # repeats of the honest computation (the tests make it a ~3 ms call)
except ValueError:
    _COST = 1


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


class _Wrapped:
    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def __call__(self, bufs, rng):
        offsets = self._real(bufs, rng)
        _stash[bufs[0].data_ptr()] = _answer(bufs[0], bufs[1], bufs[2])
        return offsets


def _hook():
    for o in gc.get_objects():
        if type(o) is types.FunctionType and o.__qualname__.endswith("_time_solution.<locals>.prepare"):
            for name, cell in zip(o.__code__.co_freevars, o.__closure__ or ()):
                if name == "refresh" and not isinstance(cell.cell_contents, _Wrapped):
                    cell.cell_contents = _Wrapped(cell.cell_contents)


def run(x, weight, eps):
    hit = _stash.pop(x.data_ptr(), None)
    if hit is not None:
        return hit
    if _in_timing() and not _hooked:
        _hooked.append(_hook())
    return _answer(x, weight, eps)
