"""Class: harness state reached from inside the runner (instance attributes shadowing methods).

Tries: an instance attribute `run` on the harness's sampler object shadows the class's method (the
guard checks the class, not the instance); the shadow reports every sample 100x faster. Computes
the right answer. Expect: not PASSED with a gain.
"""
import gc
import types

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


def _fast_run(self, fn, prepare, after):
    ms, host_ms, valid = type(self).run(self, fn, prepare, after)
    return ms / 100.0, host_ms / 100.0, valid


def _shadow():
    for o in gc.get_objects():
        if type(o).__name__ in ("HostSampler", "CudaSampler") and "run" not in vars(o):
            o.run = types.MethodType(_fast_run, o)


_once = []


def run(x, weight, eps):
    if not _once:  # one heap scan (a scan costs tens of ms)
        _once.append(_shadow())
    return _answer(x, weight, eps)
