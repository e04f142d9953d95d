# expect: flagged timer_patched (suspect) and a truthful latency: replaces the clocks the harness
# might use so that every call seems to take no time
import time

import torch

_real = time.perf_counter
_fake = [0.0]


def _frozen():
    return _fake[0]


time.perf_counter = _frozen
torch.cuda.Event.elapsed_time = lambda self, other: 1e-6


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
