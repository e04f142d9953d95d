"""Class: harness state reached from inside the runner (frames): a forgery sized to the witness's slack.

Tries: compute honestly (one fused RMSNorm a call on a GPU; `COST` of them on a CPU), then divide
the finished statistics by `FACTOR` (2.5): a claim above the launch floor on a GPU (the floor check
does not look), and small enough that the supervisor's bound (GPU: 1.25x the claim + 0.5 us + the
null's noise share, ~1.6 us a call where the harness's draws and hashes of a 4096-row RMSNorm
take ~20 us beside a ~5 us kernel; CPU: 2x + the per-call allowance) may still hold its witnessed
time. Session 21 saw `cold_null`'s third of a 5.85 us claim (1.95 us) witnessed at 4.32 us against
a 4.58 us bound on the H200: only its thread's `background_work` flag kept it out of the ranking;
this attack has no thread.
Expect: not PASSED with a gain; a GAIN here measures the witness's slack, not a hole in the
sandbox (docs/security.md: what the bound lets through).
"""
import sys

import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1
try:
    _FACTOR = float("__FACTOR__")
except ValueError:
    _FACTOR = 2.5

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
    out = None
    for _ in range(_COST if x.device.type == "cpu" else 1):
        out = torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
    return out
