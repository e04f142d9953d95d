"""Class: harness state reached from inside the runner (frames): understating the error figures.

Tries: answer 0.4% off the reference (inside the float16 tolerance, so the result is PASSED) and,
from the timed calls, walk the frames up to the evaluation and set its recorded error figures
(`corr`: max_abs, max_rel) to 0, so that its trace claims an exact answer and beats an honest,
equally fast solution on accuracy. Expect: PASSED, its trace's error figures those the supervisor's
witness measured in the reference runner (the 0.4% shows), never the forged 0.
"""
import sys

import torch

try:
    _COST = int("__COST__")  # repeats of the computation (the tests make it a ~3 ms call)
except ValueError:
    _COST = 1


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float() * 1.004).half()
    return out


def _forge():
    f = sys._getframe(1)
    while f is not None:
        corr = f.f_locals.get("corr") if f.f_code.co_name == "run" else None
        if isinstance(corr, dict) and "max_abs" in corr:
            corr["max_abs"] = 0.0
            corr["max_rel"] = 0.0
            return
        f = f.f_back


def run(x, weight, eps):
    _forge()
    return _answer(x, weight, eps)
