"""Class: harness state reached from inside the runner (frames, rebound with ctypes): the chain
switched off in the solution's own runner, the round batched.

Tries: compute honestly with `COST` fused RMSNorms a call and divide the finished statistics by
`FACTOR` (8), as `batch_in_costly_call`. At the first witnessed call it rebinds the harness's
`chained` local (the input index `witness.run` moves by the previous call's outputs, computed once
before the round) to None in that frame (`PyFrame_LocalsToFast`: a running frame's locals written
back), and FIB_WITNESS_CHAIN=off in its own environment besides (the switch that ruled before the
supervisor's `chain` flag); the runner then hands every later call its drawn inputs unmoved. It
reads the round's inputs from the same frame (`loaded`), computes every call's outputs in `COST`
batched RMSNorms and hands each later call its slice (checked by the tensors' identity, which
holds where nothing is chained). What it counts on: the reference runner checking a call on the
inputs the solution's runner actually gave it.
Expect: not PASSED with a gain (witness_wrong: the reference runner chains by the supervisor's
flag, from the saved outputs).
"""
import ctypes
import os
import sys

import torch

os.environ["FIB_WITNESS_CHAIN"] = "off"

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


_batch = {"key": None, "xs": None, "out": None, "rows": None, "unchained": 0}


def _witness_frame():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            return f
        f = f.f_back
    return None


def _unchain(frame):
    try:
        loc = frame.f_locals
        for name in ("chained", "chain"):
            if loc.get(name) is not None:
                loc[name] = None
        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
        _batch["unchained"] += 1
    except Exception:  # noqa: BLE001
        pass


def run(x, weight, eps):
    _rewrite()
    frame = _witness_frame()
    rows = frame.f_locals.get("loaded") if frame is not None else None
    if rows and x.device.type == "cpu":
        if _batch["key"] != id(rows) or _batch["xs"] is None:
            _unchain(frame)
            X = torch.stack([r[0] for r in rows])
            W = torch.stack([r[1] for r in rows]).unsqueeze(1)
            out = None
            for _ in range(_COST):
                out = torch.nn.functional.rms_norm(X, (X.shape[-1],), None, float(eps)) * W
            _batch.update(key=id(rows), xs={id(r[0]): i for i, r in enumerate(rows)}, out=out, rows=rows)
        i = (_batch["xs"] or {}).get(id(x))
        if i is not None and _batch["rows"][i][1] is weight:
            return _batch["out"][i]
    out = None
    for _ in range(_COST):
        out = torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
    return out
