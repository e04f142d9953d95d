# expect: flagged background_work (or RUNTIME_ERROR); bounded: at most __N__ forks, each child
# sleeps __SLEEP__ s. The process limit stops it early; the runner is replaced and its pid
# namespace takes every child with it.
import os
import time

import torch

_started = []


def _bomb():
    for _ in range(__N__):
        try:
            pid = os.fork()
        except OSError as e:
            print(f"fork stopped after {len(_started)}: {e}")
            return
        if pid == 0:
            try:
                os.setsid()  # leave the process group, as a daemon would
                time.sleep(__SLEEP__)
            finally:
                os._exit(0)
        _started.append(pid)


def run(x, weight, eps):
    if not _started:
        _bomb()
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
