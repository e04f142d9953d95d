"""Class: harness state reached from inside the runner (the result channel: a sealed result whose fields have unexpected types).

Tries: replace `json.dumps` (as `json_rewrite` does; the runner's sealer MACs what it returns, so
the supervisor gets a correctly sealed reply) so that the evaluation's PASSED result carries
`extra` as a list (`["fib"]`) instead of a dict; every number in it is the honest one. The
supervisor's `plausibility_problems` reads `(result.get("extra") or {}).get("samples")` before
anything checks its type, outside the witness's `except Exception`: an AttributeError out of
`_evaluate_once`, out of the worker's request handler: no trace, the client sees the worker die
(and may ask again), the runner is neither stopped nor replaced by the supervisor's own path.
Honest work. Expect: a RUNTIME_ERROR trace of this solution (implausible or forged result),
the worker and the honest solution after it unharmed.
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


def _forge(body):
    if body.get("status") == "PASSED" and isinstance(body.get("performance"), dict) and isinstance(body.get("extra"), dict):
        body["extra"] = ["fib"]


def _dumps(obj, *a, **k):
    if isinstance(obj, list) and len(obj) == 3 and isinstance(obj[2], dict):
        _forge(obj[2])
    return _real_dumps(obj, *a, **k)


json.dumps = _dumps


def run(x, weight, eps):
    return _answer(x, weight, eps)
