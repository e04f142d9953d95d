"""Class: cross-talk (the reference runner, shared by every solution, made to import code).

Tries: replace `json.dumps` (as `json_rewrite`) so that the witness's sealed reply describes every
output with the dtype "_inductor" instead of "float16". The reference runner, where no solution
ever runs and which times every later solution's reference and null calls, reads that
description with `getattr(torch, name)` (`witness._load_all`) before it checks that the answer is
a dtype; torch's module `__getattr__` imports its lazy submodules by such names (`_inductor`,
`_dynamo`, `_export`): ~900 modules, ~1.3 s and their memory, loaded for good in the reference
runner by a name the solution chose. Honest work otherwise. Expect: the description refused
without importing anything (witness_wrong), the reference runner unchanged.
"""
import json

import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


_real_dumps = json.dumps
_done = set()


def _forge(body):
    if id(body) in _done:
        return
    if body.get("status") == "OK" and isinstance(body.get("calls"), list) and "parts_ms" in body:
        _done.add(id(body))
        for row in body["calls"]:
            for e in row if isinstance(row, list) else []:
                if isinstance(e, dict) and "dtype" in e:
                    e["dtype"] = "_inductor"


def _dumps(obj, *a, **k):
    if isinstance(obj, list) and len(obj) == 3 and isinstance(obj[2], dict):
        _forge(obj[2])
    elif isinstance(obj, dict) and isinstance(obj.get("result"), dict):
        _forge(obj["result"])
    return _real_dumps(obj, *a, **k)


json.dumps = _dumps


def run(x, weight, eps):
    return _answer(x, weight, eps)
