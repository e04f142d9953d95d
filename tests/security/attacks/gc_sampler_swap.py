"""Class: harness state reached from inside the runner (gc.get_objects(), instance attributes).

Tries: find the runner's state object on the heap and replace its sampler (an instance attribute,
not a watched function) with one that reports every sample 100x faster. Computes the right answer.
Expect: not PASSED with a gain.
"""
import gc

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


class _Faster:
    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def run(self, fn, prepare, after):
        ms, host_ms, valid = self._real.run(fn, prepare, after)
        return ms / 100.0, host_ms / 100.0, valid


def _swap():
    for o in gc.get_objects():
        if type(o).__name__ == "RunnerState" and hasattr(o, "sampler") and not isinstance(o.sampler, _Faster):
            o.sampler = _Faster(o.sampler)


_once = []


def run(x, weight, eps):
    if not _once:  # one heap scan (a scan costs tens of ms)
        _once.append(_swap())
    return _answer(x, weight, eps)
