"""Class: harness state reached from inside the runner (frames): a trace no reader can parse.

Tries: compute the right answer (honest work), and from a timed call find the evaluation
(`EvalRun`, a `self` up the frames) and put into its `extra` dict (copied whole into the trace's
`correctness.extra`) a list nested __DEPTH__ deep (default 220). Python's json (runner and
supervisor) and pydantic's serializer (the worker's `model_dump_json`, up to ~255 levels) take
it; pydantic's JSON parser stops at ~200 levels. So the worker writes a trace that the client's
`Trace.model_validate_json` (send_request), the pipeline's aggregate job (which parses every new
trace of the definition before merging any) and every later reader of the traces file refuse.
Expect: the trace parses (or the extra is cut), the evaluation ends in an ordinary trace.
"""
import sys

import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1
try:
    _DEPTH = int("__DEPTH__")
except ValueError:
    _DEPTH = 220


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


def _deep(n):
    v = []
    for _ in range(n - 1):
        v = [v]
    return v


def _plant():
    f = sys._getframe(1)
    while f is not None:
        me = f.f_locals.get("self")
        if type(me).__name__ == "EvalRun" and isinstance(getattr(me, "extra", None), dict):
            me.extra["h19b_nested"] = _deep(_DEPTH)
            return
        f = f.f_back


def run(x, weight, eps):
    _plant()
    return _answer(x, weight, eps)
