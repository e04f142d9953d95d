"""Class: harness state reached from inside the runner (monkeypatching a shared module the
harness uses: `json`): a sealed witness reply of unexpected types.

Tries: replace `json.dumps` (as `json_rewrite` does) so that (1) the evaluation's result is
forged, latency / 100 (a sealed forgery the witness should dispute), and (2) the witness's
sealed reply keeps `k` entries in `calls` but each an integer instead of a list of output
descriptions. The supervisor's round iterates every entry (`for e in row`) before anything
checks its type: a TypeError outside the witness's handlers (`_Abort`), out of `verify`, out of
the worker's evaluation. Honest work. What it counts on: no `timing_disputed` trace; the client
gets "the worker died during the evaluation" (a trace whose hardware is "unavailable (cpu)",
another identity than the real one's, with no log), and the pipeline's fast path re-asks the
worker (a second evaluation). Expect: not PASSED with a gain; a failure of the supervisor's own
kind, naming the real hardware (timing_disputed or witness_failed).
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
    perf = body.get("performance") or {}
    if body.get("status") == "PASSED" and perf.get("latency_ms"):
        _done.add(id(body))
        perf["latency_ms"] /= 100.0
        perf["speedup_factor"] = perf["reference_latency_ms"] / perf["latency_ms"]
        ex = body.get("extra") or {}
        for k in ("latency_ms_median", "latency_ms_p10", "latency_ms_p90"):
            if isinstance(ex.get(k), float):
                ex[k] /= 100.0
    elif body.get("status") == "OK" and isinstance(body.get("calls"), list) and "parts_ms" in body:
        _done.add(id(body))
        body["calls"] = [0] * len(body["calls"])


def _dumps(obj, *a, **k):
    if isinstance(obj, list) and len(obj) == 3 and isinstance(obj[2], dict):
        _forge(obj[2])
    elif isinstance(obj, dict) and isinstance(obj.get("result"), dict):
        _forge(obj["result"])
    return _real_dumps(obj, *a, **k)


json.dumps = _dumps


def run(x, weight, eps):
    return _answer(x, weight, eps)
