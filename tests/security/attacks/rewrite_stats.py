"""Class: harness state reached from inside the runner (frames): rewriting the timing statistics.

Tries: during the audit calls that follow the timing, walk the frames up to the evaluation and
divide the finished statistics object's fields (latency, median, percentiles) by 100 before the
speedup is computed from them. Its own answers are right. Expect: not PASSED with a gain.
"""
import sys

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


_done = set()


def _rewrite():
    f = sys._getframe(1)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / 100.0)
            _done.add(id(st))
            return
        f = f.f_back


def run(x, weight, eps):
    _rewrite()
    return _answer(x, weight, eps)
