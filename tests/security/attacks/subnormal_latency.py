"""Class: harness state reached from inside the runner (monkeypatching `json`): a latency the
supervisor's arithmetic cannot take.

Tries: replace `json.dumps` (as `json_rewrite`) so that the sealed result claims a latency of
1e-320 ms: a subnormal float, finite and positive, so `plausibility_problems` accepts it (its
speedup, reference / latency, overflows to Infinity, which `math.isclose` finds equal to the
forged Infinity). The witness then sizes its round with ROUND_MS / claim = inf and
`math.ceil(inf)` raises OverflowError in the supervisor (`witness._k_for`), outside every
handler. Honest work. What it counts on: no `timing_disputed` trace recorded; the client gets
"the worker died during the evaluation" under the hardware "unavailable (cpu)" (another trace
identity: an older PASSED trace of the real hardware is not replaced), with no log, and the
pipeline re-asks the worker. Expect: a supervisor verdict (implausible or disputed), naming the
real hardware.
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
    perf = body.get("performance") or {}
    if body.get("status") == "PASSED" and perf.get("latency_ms") and id(body) not in _done:
        _done.add(id(body))
        perf["latency_ms"] = 1e-320
        perf["speedup_factor"] = float("inf")
        ex = body.get("extra") or {}
        for k in ("latency_ms_median", "latency_ms_p10", "latency_ms_p90"):
            if isinstance(ex.get(k), float):
                ex[k] = 1e-320


def _dumps(obj, *a, **k):
    if isinstance(obj, list) and len(obj) == 3 and isinstance(obj[2], dict):
        _forge(obj[2])
    elif isinstance(obj, dict) and isinstance(obj.get("result"), dict):
        _forge(obj["result"])
    return _real_dumps(obj, *a, **k)


json.dumps = _dumps


def run(x, weight, eps):
    return _answer(x, weight, eps)
