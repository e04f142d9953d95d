"""Class: leaks and gaps (the supervisor's time): a stepped round that outlasts the job's timeout.

Tries: correct outputs at once in the evaluation (a cheap claim: a round of 128 calls, stepped
where FIB_WITNESS_STEPPED=on), but in a stepped witness round every call sleeps __SLEEP__ s before
it answers. Each step's wait for the runner's answer has its own `timeout` (`_Steps.run`:
recv_exact(sock, 8, timeout) per call) and the round's reply another, so a round may hold the
supervisor for k x timeout (128 x 60 s) instead of the round's one timeout; asleep, the calls cost
no CPU time and the round is within its bound. Expect: the round ends within the job's timeout
(`timeout_s`) and the trace is not PASSED.
"""
import sys
import time

import torch

try:
    _SLEEP = float("__SLEEP__")
except ValueError:
    _SLEEP = 0.6


def _stepped():
    f = sys._getframe(2)
    for _ in range(8):
        if f is None:
            return False
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            return f.f_locals.get("steps") is not None
        f = f.f_back
    return False


def run(x, weight, eps):
    if _stepped():
        time.sleep(_SLEEP)
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
