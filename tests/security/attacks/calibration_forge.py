"""Class: harness state reached from inside the runner (frames): a modest forgery of a slow call,
meant for the load calibration's widened bound (session 20).

Tries: compute honestly at ~3 ms a call (`COST` repeats) and divide the finished statistics by 5:
the claim (~0.6 ms) gets a round of fewer than 32 calls, so before a dispute the supervisor times
the reference (`_Witness.calibrate`) and widens the bound by its slowdown (at most 3x: a 5x forgery
passes once the load factor is over ~2.3). Expect: disputed (the reference is not slower than its
own measurement: load 1), never PASSED.
"""
import sys

import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


_done = set()


def _rewrite():
    f = sys._getframe(1)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / 5.0)
            _done.add(id(st))
            return
        f = f.f_back


def run(x, weight, eps):
    _rewrite()
    return _answer(x, weight, float(eps))
