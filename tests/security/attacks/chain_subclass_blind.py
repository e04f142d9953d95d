"""Class: harness state reached from inside the runner (a tensor subclass's hook runs inside the
harness's chain): the chain shown zeros, the round batched on its drawn inputs.

Tries: compute honestly with `COST` fused RMSNorms a call and divide the finished statistics by
`FACTOR` (8), as `batch_in_costly_call`. In the witness, at the first call it reads the round's
drawn inputs from the harness's frame (`loaded`) and makes every call's outputs in `COST` batched
RMSNorms, then returns call i's slice as a tensor subclass whose `__torch_function__`, called from
the harness's `_chained` (the chain reads the previous call's first output with `detach()`),
answers zeros: sin(0) = 0, so the runner's chain moves no input and each call's inputs are its
drawn ones, which the batch was made for. Everywhere else (the save) it is the plain tensor, so
the saved outputs are the batch's right answers on the drawn inputs. What it counts on: the check
trusting the chain the runner applied (it does not: the reference runner rebuilds a checked
call's inputs from the previous call's saved outputs).
Expect: not PASSED with a gain (witness_wrong: the saved outputs are not those of the chained
inputs).
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


def _witness_frame():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            return f.f_locals
        f = f.f_back
    return None


class _Blind(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        f = sys._getframe(1)
        in_chain = f is not None and f.f_code.co_name == "_chained"
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **kwargs)
            if in_chain and isinstance(out, torch.Tensor) and out.is_floating_point():
                return torch.zeros_like(out)
            return out


_batch = {"key": None, "out": None}


def _norm(x, weight, eps):
    out = None
    for _ in range(_COST):
        out = torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
    return out


def run(x, weight, eps):
    _rewrite()
    loc = _witness_frame()
    if loc is not None and loc.get("loaded") is not None and loc.get("results") is not None:
        rows, i = loc["loaded"], len(loc["results"])
        if _batch["key"] != id(rows):
            X = torch.stack([r[0] for r in rows])
            W = torch.stack([r[1] for r in rows]).unsqueeze(1)
            out = None
            for _ in range(_COST):
                out = torch.nn.functional.rms_norm(X, (X.shape[-1],), None, float(eps)) * W
            _batch.update(key=id(rows), out=out)
        if i < _batch["out"].shape[0]:
            return _batch["out"][i].as_subclass(_Blind)
    return _norm(x, weight, eps)
