"""Class: harness state reached from inside the runner (rewriting the sampler's statistics
through a patch that removes itself before anyone checks).

Tries: during a timed call, replace `timing.summarize` (looked up at the end of the timing loop)
with a wrapper that puts the original back the moment it runs and summarises samples divided by
100. The guard compares identities after the evaluation: by then everything is original again.
Its own answers are right. Expect: not PASSED with a gain.
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


_timing = sys.modules["flashinfer_bench.bench.timing"]
_orig = _timing.summarize


def _summarize(samples, **kw):
    _timing.summarize = _orig
    return _orig([s / 100.0 for s in samples], **kw)


def run(x, weight, eps):
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "_time_solution":
            _timing.summarize = _summarize
            break
        f = f.f_back
    return _answer(x, weight, eps)
