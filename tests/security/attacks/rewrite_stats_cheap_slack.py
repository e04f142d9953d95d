"""Class: harness state reached from inside the runner (frames): a cheap call forged by the witness's slack.

Tries: compute honestly with one fused RMSNorm a call (a cheap call: ~12 us on the 2-core CPU VM,
~3-6 us on a GPU), then divide the finished statistics by `FACTOR` (3). On a CPU a cheap claim gets
a round of up to 128 calls whose bound is 2x the claim + 2 ms / k (15.6 us a call at 128): more than
the call itself, so a third of a ~12 us claim (4 us; bound ~24 us) holds a witnessed ~20 us
(session 21: PASSED, a forgery of ~2.5x, 3 of 3). On a GPU: 1.25x the claim + 0.5 us + the null's
noise share (`cold_null`'s third of a 5.85 us claim passed the H200's bound). No thread, nothing
replaced: only the statistics.
Expect: not PASSED with a gain; a GAIN here measures the witness's slack, not a hole in the
sandbox (docs/security.md: what the bound lets through).
"""
import sys

import torch

try:
    _FACTOR = float("__FACTOR__")
except ValueError:
    _FACTOR = 3.0

_done = set()


def _rewrite():
    f = sys._getframe(1)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / _FACTOR)
            _done.add(id(st))
            return
        f = f.f_back


def run(x, weight, eps):
    _rewrite()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
