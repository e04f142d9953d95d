"""Class: harness state reached from inside the runner (the witness's runner side): opting out of
the supervisor's witness by making its check fail.

Tries: divide the finished timing statistics by 100 (as rewrite_stats does) and, so that the
witness cannot dispute that, replace the runner's witness call (`witness.run` in this process)
with one that answers each round with output descriptions the reference runner cannot use (a
negative shape whose byte count matches it, then scalars where tensors belong), hoping that a
check that raises gives `unwitnessed` (not suspect) instead of a verdict. Its own answers in the
evaluation are right. Expect: not PASSED with a gain (the outputs count as wrong: witness_wrong).
"""
import sys

import torch

try:
    _COST = int("__COST__")  # repeats of the honest computation (the tests make it a ~3 ms call)
except ValueError:
    _COST = 1


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


_rounds = []


def _bad_run(state, saved_inputs, folder):
    _rounds.append(1)
    if len(_rounds) % 2:
        row = [{"dtype": "float16", "shape": [-4, 2], "file": "outputs.bin", "offset": 0, "nbytes": -16}]
    else:
        row = [{"scalar": None}]
    return {"status": "OK", "calls": [list(row) for _ in saved_inputs]}


for name, mod in list(sys.modules.items()):
    if name.endswith("sandbox.witness") and hasattr(mod, "run"):
        mod.run = _bad_run

_done = set()


def _rewrite():
    f = sys._getframe(1)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / 100.0)
            _done.add(id(st))
            return
        f = f.f_back


def run(x, weight, eps):
    _rewrite()
    return _answer(x, weight, eps)
