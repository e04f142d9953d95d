"""Class: harness state reached from inside the runner (frames): a costly call's round, batched.

Tries: compute honestly with `COST` fused RMSNorms a call (the tests make it ~1 ms on a CPU)
and divide the finished statistics by `FACTOR` (8): the forged claim buys it a round of ~34
calls (`_k_for`), which is handed over at once unless FIB_WITNESS_STEPPED=on (stepping only the
rounds of few, costly calls would not reach it). At the first witnessed call (the harness's `run` of the
witness module on the stack) it reads the round's whole input list from that frame (`loaded`)
and makes every call's outputs in `COST` batched RMSNorms over all the round's rows (one kernel
launch where the honest calls make one a call: on small rows the launches are the cost), then
hands each later call its precomputed slice (checked by the tensors' identity). All outputs are
right; a round of k costly calls costs about one.
Expect: not PASSED with a gain (a GAIN means the witness times a round whose calls could be
made together as if each were a latency).
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
    _FACTOR = 8.0

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


_batch = {"key": None, "xs": None, "out": None, "rows": None}


def _witness_rows():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            return f.f_locals.get("loaded")
        f = f.f_back
    return None


def _norm(x, weight, eps):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))


def run(x, weight, eps):
    _rewrite()
    rows = _witness_rows()
    if rows and x.device.type == "cpu":
        if _batch["key"] != id(rows) or _batch["xs"] is None:
            X = torch.stack([r[0] for r in rows])  # (k, rows, hidden)
            W = torch.stack([r[1] for r in rows]).unsqueeze(1)  # each call's own weight
            out = None
            for _ in range(_COST):
                out = torch.nn.functional.rms_norm(X, (X.shape[-1],), None, float(eps)) * W
            _batch.update(key=id(rows), xs={id(r[0]): i for i, r in enumerate(rows)}, out=out, rows=rows)
        i = (_batch["xs"] or {}).get(id(x))
        if i is not None and _batch["rows"][i][1] is weight:
            return _batch["out"][i]
    out = None
    for _ in range(_COST):
        out = _norm(x, weight, eps)
    return out
