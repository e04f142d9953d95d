"""Class: harness state reached from inside the runner (frames): forging the trace's hardware.

Tries: compute the right answer (honest work), and from a timed call walk the frames up to the
evaluation (`EvalRun.run`) and write `hardware`, `device`, `gpu_uuid` and `libs` into the
per-evaluation environment dict it returns with the result (`env`: start time, clocks, seed).
The supervisor builds the trace's environment from its own static facts (`hardware` from the
runner's ready message) and then updates it with that per-evaluation dict. The hardware string
is a trace's identity (`trace_key`: merge_traces replaces only a trace of the same hardware), the
report's grouping key and what apply() matches traces by: a CPU result filed as an "NVIDIA B200"
one, or a failing re-run filed under another name so that an old PASSED trace is never replaced.
Expect: the trace names the supervisor's hardware and device, never the forged ones.
"""
import sys

import torch

try:
    _COST = int("__COST__")  # repeats of the honest computation (the tests make it a ~3 ms call)
except ValueError:
    _COST = 1

FORGED = {"hardware": "NVIDIA B200", "device": "cuda:0", "device_index": 0,
          "gpu_uuid": "GPU-00000000-0000-0000-0000-000000000000", "libs": {"torch": "9.9.9", "cuda": "13.9"}}


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


def _forge():
    f = sys._getframe(1)
    while f is not None:
        env = f.f_locals.get("env") if f.f_code.co_name == "run" else None
        if isinstance(env, dict) and "start_time" in env:
            env.update(FORGED)
            return
        f = f.f_back


def run(x, weight, eps):
    _forge()
    return _answer(x, weight, eps)
