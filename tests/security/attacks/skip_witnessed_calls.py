"""Class: harness state reached from inside the runner (frames): do only part of the witness's work.

Tries: one RMSNorm a call (tens of microseconds on a CPU, whatever `COST` says); inside the
supervisor's witness calls (a `witness` module on the call stack) compute only every third call
and hand back zeros for the others, so a round costs a third of its calls; the statistics divided
by 3 so that the claim matches the shortened round. A cheap claim's CPU round has 64 calls, of
which the reference runner checks 8 drawn after the calls returned. Expect: INCORRECT_NUMERICAL
`witness_wrong` (all 8 would have to land on computed calls: (1/3)^8). On a GPU the device-time
round's calls are captured from witness_graph.py: the same skipping (skip_captured_calls).
"""
import sys

import torch

_done = set()
_witness_calls = [0]


def _rewrite():
    f = sys._getframe(1)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / 3.0)
            _done.add(id(st))
            return
        f = f.f_back


def _witnessed() -> bool:
    f = sys._getframe(1)
    while f is not None:
        if "witness" in f.f_code.co_filename.rsplit("/", 1)[-1]:
            return True
        f = f.f_back
    return False


def run(x, weight, eps):
    _rewrite()
    if _witnessed():
        _witness_calls[0] += 1
        if _witness_calls[0] % 3:
            return torch.zeros_like(x)
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
