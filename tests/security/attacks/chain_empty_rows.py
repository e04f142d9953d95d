"""Class: harness state reached from inside the runner (frames): a chained round's earlier calls
described as having no outputs at all.

Tries: compute honestly with `COST` fused RMSNorms a call in the evaluation and divide the
finished statistics by `FACTOR` (20). In the witness (the harness's `run` of the witness module on
the stack) every call but the last returns its own input `x` (no work) and, at each call, empties
the rows of the harness's `results` list (a local of that frame) that earlier calls appended: the
chain has already read them (it moves call i's input by call i-1's outputs before call i), and
`_save_all` then describes those calls as rows with no tensor. The last call computes honestly
(its row stays). What it counts on: the reference runner's check pairs the definition's outputs
with a row's entries by `zip` (`check_structure`, `Checker.timed_bad`), so an empty row has nothing
to compare and passes; and a checked call whose previous row is empty is rebuilt unchained (no
first tensor to take the sine of). A round of k calls then costs one call. The harness's rows are
tuples since session 21 (`row.clear()` raises), so it replaces them in the list instead
(`results[i] = ()`), which the supervisor's count of each row's outputs refuses.
Expect: not PASSED with a gain (a GAIN means a call that reports no outputs is counted as checked).
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
    _FACTOR = 20.0

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


def _witness_frame():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            return f.f_locals
        f = f.f_back
    return None


def _norm(x, weight, eps):
    out = None
    for _ in range(_COST):
        out = torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
    return out


def run(x, weight, eps):
    _rewrite()
    loc = _witness_frame()
    if loc is not None and loc.get("results") is not None and loc.get("loaded") is not None:
        results, loaded = loc["results"], loc["loaded"]
        for i, row in enumerate(results):  # every earlier call's outputs: the chain has read them already
            if isinstance(row, list):
                row.clear()
            else:
                results[i] = type(row)()
        if len(results) < len(loaded) - 1:
            return x
    return _norm(x, weight, eps)
