"""Class: cross-talk (a process that outlives its runner: the orphans' reaper turned off).

Tries: the runner makes itself its orphans' reaper (a CUDA runner has no pid namespace), so a
double-forked daemon comes back to it and dies with it. On its first call it turns that off
(`prctl(PR_SET_CHILD_SUBREAPER, 0)`), then double-forks a daemon into a session of its own, which
sleeps; where the prctl works, the daemon's parent is init and no walk of the runner's tree finds
it. It prints what the prctl answered and the daemon's pid. Correct outputs.
Expect: the prctl refused (EPERM), and the daemon gone once its runner is.
"""
import ctypes
import os
import time

import torch

_done = []


def _start() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    r = libc.prctl(36, 0, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER off
    print(f"UNSET REAPER REPORT prctl = {r} errno {ctypes.get_errno()}", flush=True)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            print(f"UNSET REAPER REPORT daemon {os.getpid()}", flush=True)
            time.sleep(120)
        os._exit(0)
    time.sleep(0.2)


def run(x, weight, eps):
    if not _done:
        _done.append(1)
        _start()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
