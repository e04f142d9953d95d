"""Class: harness state reached from inside the runner (frames): a forgery of a cheap call.

Tries: compute honestly with one fused RMSNorm (tens of microseconds on a CPU for the tests'
workload, whatever `COST` says), and divide the finished statistics by 20. Expect: not PASSED
with a gain. On the CPU it passed in some runs until session 15 (8 calls a round, 0.25 ms a call
allowed: the harness's share of a round varied by more than the calls cost); a cheap claim's round
now has 64 calls, each round less a null measured beside it, two such rounds within the bound
(docs/security.md, "The witness's resolution"). On a GPU the device-time round disputes it where
the call is ~10-20 us or more, and the launch floor flags it below.
"""
import sys

import torch

_done = set()


def _rewrite():
    f = sys._getframe(1)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / 20.0)
            _done.add(id(st))
            return
        f = f.f_back


def run(x, weight, eps):
    _rewrite()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
