"""Class: harness state reached from inside the runner (frames): right while its own process checks
it, wrong when the supervisor's witness calls it.

Tries: look up the call stack on every call; while the evaluation runs (trials, timed calls,
re-checks) return the right answer, inside the witness's calls (`sandbox/witness*.py`) return it
scaled by 1.5 (the work a cheaper, wrong kernel would do). Expect: INCORRECT_NUMERICAL
`witness_wrong`, the message naming the witness's calls that were wrong.
"""
import sys

import torch


def _witnessed() -> bool:
    f = sys._getframe(1)
    while f is not None:
        if "witness" in f.f_code.co_filename.rsplit("/", 1)[-1]:
            return True
        f = f.f_back
    return False


def run(x, weight, eps):
    xf = x.float()
    out = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()
    return (out * 1.5 if _witnessed() else out).half()
