"""Class: leaks and gaps (processes and threads at build time: no task limit on a build).

Tries: a runner is held to FIB_SANDBOX_NPROC tasks (a pids cgroup and RLIMIT_NPROC), but a build
child (the entry module's body runs at import) has neither: no pids cgroup, no RLIMIT_NPROC (which
binds no process of uid 0 anyway), no pid namespace. A build may start processes and threads until
the machine's `kernel.pid_max` (32768 here) or `threads-max` runs out, and hold them until the
build timeout (900 s) kills it: meanwhile no process of the machine can fork (the worker cannot
start a runner, Snakemake cannot start a job, the supervisor's reference runner cannot be
replaced). Bounded here: at import it starts up to __N__ threads (default 1500; each waits on one
lock, 64 KiB stacks) and counts how many it got before the first refusal, releases them, prints
the count in the build log and builds normally. Its `run` is honest.
Expect (the defence should make it so): a build gets at most about a runner's task limit
(FIB_SANDBOX_NPROC + the runner's base of 64): the threads past it are refused.
"""
import threading

import torch

_N = int("__N__") if "__N__".isdigit() else 1500


def _flood():
    threading.stack_size(64 << 10)
    gate = threading.Event()
    started, why = [], "none"
    for _ in range(_N):
        t = threading.Thread(target=gate.wait, daemon=True)
        try:
            t.start()
        except RuntimeError as e:  # "can't start new thread": EAGAIN from clone
            why = str(e)
            break
        started.append(t)
    gate.set()
    for t in started:
        t.join()
    print(f"BUILD TASK FLOOD REPORT started {len(started)} of {_N} threads at once (first refusal: {why})", flush=True)


_flood()


def run(x, weight, eps):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
