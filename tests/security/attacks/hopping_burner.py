"""Class: cross-talk (processes that hop faster than a walk of the runner's process tree).

Tries: correct outputs, but its first call starts __CHAINS__ chains of small processes (a bare
Python, so a fork costs little), each in a session of its own (a signal to the runner's process
group misses them), that never stay put: every ~3 ms a process forks its successor and exits, so a
pid listed by a walk of the runner's tree is gone by the time a signal is sent to it, and its
successor was not listed; the first process of each chain is reaped at once, so the runner's
own check of leftover children (in its process, where the solution runs) sees none. Each burns a core whenever the solution has not been called for 0.3 s
(a file in scratch holds the time of its last call) and only hops otherwise: while its runner
is parked beside another solution's evaluation, between its jobs, while the reference of its
next workload is timed. Expect: stopped like any runner (none of its processes gets CPU while
another evaluation runs), the honest solution after it unchanged.
"""
import os
import struct
import subprocess
import sys
import time

import torch

_CHAINS = int("__CHAINS__") if "__CHAINS__".isdigit() else 2
_HOP = r"""
import os, struct, sys, time
fd, n = int(sys.argv[1]), 0
while True:
    try:
        last = struct.unpack("d", os.pread(fd, 8, 0))[0]
    except (OSError, struct.error):
        last = 0.0
    end = time.monotonic() + 0.003
    if time.monotonic() - last > 0.3:
        while time.monotonic() < end:
            n = (n * 31 + 7) % 1000003
    else:
        time.sleep(0.003)
    try:
        if os.fork():
            os._exit(0)
    except OSError:
        time.sleep(0.01)
"""
_stamp = []


def _touch() -> None:
    if _stamp:
        os.pwrite(_stamp[0], struct.pack("d", time.monotonic()), 0)


def run(x, weight, eps):
    if not _stamp:
        fd = os.open("hop.stamp", os.O_RDWR | os.O_CREAT, 0o600)
        _stamp.append(fd)
        _touch()
        for _ in range(_CHAINS):
            # reaped at once (its first hop comes within 3 ms): the runner is left no child, not
            # even a zombie, for its own check of leftover processes to see; the chain hops on
            # below the runner's reaper (the pid namespace's init, or the runner as subreaper)
            subprocess.Popen([sys.executable, "-S", "-c", _HOP, str(fd)], pass_fds=(fd,), start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).wait()
    _touch()
    xf = x.float()
    out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
    _touch()
    return out
