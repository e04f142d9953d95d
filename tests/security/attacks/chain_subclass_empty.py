"""Class: harness state reached from inside the runner (a tensor subclass's hook runs inside the
harness's save): a chained round described as having no outputs, no call computed.

Tries: compute honestly with `COST` fused RMSNorms a call in the evaluation (plain tensors there)
and divide the finished statistics by `FACTOR` (20). In the witness every call returns its input
`x` viewed as a tensor subclass (no work; outputs are only type-checked in the reference runner,
on the plain tensors it loads). The subclass's `__torch_function__` runs wherever the harness
touches it: the chain's reads (`_chained`) get plain tensors, but in `_layout` (the first row's
`detach`) it empties the later rows of the harness's `results`, and once `_save_all` has the
description (`meta`, a local of that frame, while `_write_host` writes the first row's bytes) it
empties every row of it. The supervisor gets k rows with no tensor in them; the reference runner's check
pairs the definition's outputs with a row's entries by `zip`, so nothing is compared and nothing
is chained. Unlike `chain_empty_rows`, not even the last call computes.
Expect: not PASSED with a gain (a GAIN means a round whose calls report no outputs is counted as
checked).
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


def _in_witness():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            return True
        f = f.f_back
    return False


def _harness_frame():
    """The harness's frame this hook runs under: ("save", its locals) once `_save_all` has its
    description, ("layout", locals) while `_layout` makes it, else (None, None)."""
    f = sys._getframe(2)
    for _ in range(5):
        if f is None:
            break
        name = f.f_code.co_name
        if name in ("_save_all", "_layout") and f.f_code.co_filename.endswith("witness.py"):
            return ("save" if name == "_save_all" else "layout"), f.f_locals
        f = f.f_back
    return None, None


class _Hollow(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        where, loc = _harness_frame()
        if where == "save" and isinstance(loc.get("meta"), list):  # the bytes being written: the description exists
            for row in loc["meta"]:
                row.clear()
        elif where == "layout" and isinstance(loc.get("rows"), list):  # the description being made
            mine = loc.get("row")
            for row in loc["rows"]:
                if row is not mine and isinstance(row, list):
                    row.clear()  # the rows after this one describe nothing
        else:  # the chain's reads and anything else: plain tensors from here on (cheap)
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)
        return super().__torch_function__(func, types, args, kwargs)  # stays a _Hollow: hooked again in _write_host


def run(x, weight, eps):
    _rewrite()
    if _in_witness():
        return x.as_subclass(_Hollow)
    out = None
    for _ in range(_COST):
        out = torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
    return out
