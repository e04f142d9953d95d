"""Class: harness state reached from inside the runner (frames).

Tries: from inside each timed call, walk the interpreter's frames up to the timing loop
(`timing.measure`) and divide every timing sample recorded so far by 100 (the sample list is a
mutable object the frame holds). Its own answers are right, so every check passes; only the
numbers lie. Expect: not PASSED with a gain (the supervisor's witness timing disagrees).
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


_seen = {}


def _shrink_samples():
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "measure" and "samples" in f.f_locals:
            s = f.f_locals["samples"]
            done = _seen.get(id(s), 0)
            for i in range(done, len(s)):
                s[i] = s[i] / 100.0
            _seen[id(s)] = len(s)
            return
        f = f.f_back


def run(x, weight, eps):
    _shrink_samples()
    return _answer(x, weight, eps)
