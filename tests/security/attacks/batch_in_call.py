"""Class: harness state reached from inside the runner (frames): the witness's calls are all
there at once.

Tries: compute honestly with one fused RMSNorm a call (tens of microseconds on a CPU, whatever
`COST` says) and divide the finished statistics by 20. The harness's own witness call is left
alone (its loading, saving and per-call wrapper are paid as the null pays them); but at the first
witnessed call (the harness's `run` of the witness module on the stack) the solution reads the
round's whole input list from that frame (`loaded`) and computes every call's output in one
batched RMSNorm, handing each later call its precomputed slice after checking that its inputs
are the ones it was computed for (identity of the tensors). All outputs are right; a call costs
the witness a list lookup instead of a kernel launch.
Expect: not PASSED with a gain (a GAIN means a round of calls made together is timed as
if each were a latency).
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


_batch = {"key": None, "xs": None, "out": None}


def _witness_rows():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            return f.f_locals.get("loaded")
        f = f.f_back
    return None


def run(x, weight, eps):
    _rewrite()
    rows = _witness_rows()
    if rows:
        if _batch["key"] != id(rows) or _batch["xs"] is None:
            X = torch.stack([r[0] for r in rows]).float()
            W = torch.stack([r[1] for r in rows]).float().unsqueeze(1)
            out = (X * torch.rsqrt(X.pow(2).mean(-1, keepdim=True) + float(eps)) * W).half()
            _batch.update(key=id(rows), xs={id(r[0]): i for i, r in enumerate(rows)}, out=out, rows=rows)
        i = _batch["xs"].get(id(x))
        if i is not None and _batch["rows"][i][1] is weight:
            return _batch["out"][i]
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
