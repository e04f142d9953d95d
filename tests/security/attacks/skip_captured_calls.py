"""Class: harness state reached from inside the runner (frames; the capture's own flag): do only
part of the witness's work.

Tries: when the device-time round captures its calls into a CUDA graph (the call sees
`torch.cuda.is_current_stream_capturing()`), compute only every third call and hand back
uninitialised outputs for the others (their hashes are honest hashes of garbage), so the replayed
round is ~3x shorter; the statistics divided by 3 as well, so the claim matches the shortened
round. A witness that checks one call of the round passes it two times in three. On a CPU (no
capture) it computes every call: `COST` repeats, as the tests make the honest call ~3 ms there.
Expect: not PASSED with a gain (several calls of each round are checked: all of them must land
on computed calls, (1/3)^8).
"""
import sys

import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1
_done = set()
_captured = [0]


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


def run(x, weight, eps):
    _rewrite()
    if x.device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        _captured[0] += 1
        if _captured[0] % 3:
            return torch.empty_like(x)  # no work: garbage the harness hashes as it is
    out = None
    for _ in range(_COST if x.device.type == "cpu" else 1):
        out = torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
    return out
