"""Class: leaks and gaps (memory the supervisor's watch does not see).

Tries: write __N__ anonymous memory files (memfd_create) of __MB__ MiB each, never mapped: their
pages are shared memory held by file descriptors, not resident memory of any process, so a watch
of RSS misses them, and each stays under the per-file size limit. Holds them while it computes.
Expect: the runner's memory limit stops it (RUNTIME_ERROR naming the limit), nothing outlives it.
"""
import os
import time

import torch

_held = []
_tried = []


def _fill():
    block = b"\xcd" * (1 << 20)
    got = 0
    try:
        for i in range(__N__):
            fd = os.memfd_create(f"fib{i}")
            _held.append(fd)
            for _ in range(__MB__):
                os.write(fd, block)
                got += 1
    except OSError as e:
        print(f"memfd stopped at {got} MiB: {type(e).__name__}: {e.strerror}", flush=True)
        return
    print(f"MEMFD REPORT holding {got} MiB in {len(_held)} memfds", flush=True)


def run(x, weight, eps):
    if not _tried:
        _tried.append(1)
        _fill()
        time.sleep(1.0)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
