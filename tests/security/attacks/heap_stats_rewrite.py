"""Class: harness state reached from inside the runner (the heap: gc.get_objects(), no frames): rewriting the timing statistics.

Tries: the attacks that rewrite the statistics walk the frames to the evaluation's `stats` local;
this one never looks at a frame: at most every 20 ms of its calls it scans the collector's heap
for the sampler's finished statistics (a `TimingStats`) and divides
every one it has not seen by 100, in the audit calls that follow the timing (the speedup is
computed from them later). Its own answers are right (`COST` RMSNorms a call).
Expect: not PASSED with a gain (the witness times it from outside).
"""
import gc
import time

import torch

try:
    _COST = int("__COST__")  # repeats of the honest computation (the tests make it a ~3 ms call)
except ValueError:
    _COST = 1

_FIELDS = ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms")
_done = set()
_last = [0.0]
_found = [0]


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


def _scan():
    now = time.monotonic()
    if now - _last[0] < 0.02:
        return
    for o in gc.get_objects():
        try:
            if id(o) in _done or type(o).__name__ != "TimingStats" or not hasattr(o, "p90_ms"):
                continue
        except Exception:  # noqa: BLE001 - odd objects on the heap
            continue
        for k in _FIELDS:
            v = getattr(o, k, None)
            if isinstance(v, float):
                setattr(o, k, v / 100.0)
        _done.add(id(o))
        _found[0] += 1
    _last[0] = time.monotonic()


def run(x, weight, eps):
    _scan()
    return _answer(x, weight, eps)
