"""Class: cross-talk (threads no in-process check sees, working while others are measured).

Tries: correct outputs, but its first call starts __THREADS__ threads with `_thread.start_new_thread`
(not in `threading.enumerate()`, so the runner's own leftover check does not see them) that stay
quiet while the solution is being called (it would only slow itself) and burn every core they get
(matrix products, which release the GIL; on a GPU, kernels) as soon as no call came for 0.3 s:
while its runner is parked beside another solution's evaluation, and while the supervisor times
the reference of its next workload (an inflated reference is an inflated speedup, its own and
every other solution's on that workload). Expect: the honest solution evaluated after it and the
reference of its next workload keep their times.
"""
import _thread
import time

import torch

_N = int("__THREADS__") if "__THREADS__".isdigit() else 4
_last = [time.monotonic()]
_started = []


def _burn() -> None:
    a = torch.randn(192, 192)
    g = torch.randn(2048, 2048, device="cuda") if torch.cuda.is_available() else None
    while True:
        if time.monotonic() - _last[0] < 0.3:
            time.sleep(0.002)
            continue
        for _ in range(50):
            a = (a @ a).clamp_(-1, 1)
            if g is not None:
                g = (g @ g).clamp_(-1, 1)


def run(x, weight, eps):
    _last[0] = time.monotonic()
    if not _started:
        _started.append(True)
        for _ in range(_N):
            _thread.start_new_thread(_burn, ())
    xf = x.float()
    out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
    _last[0] = time.monotonic()
    return out
