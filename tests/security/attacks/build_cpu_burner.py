"""Class: cross-talk (a build's code burning the CPU while other solutions are measured: builds take no measurement lock).

Tries: every runner that has run a solution is stopped while others are measured, but a build runs
solution code too (the entry module's body at import), and compile jobs are not under the
device's measurement lock: the workflow runs `compile` / `compile_only` jobs beside `benchmark`
jobs (only benchmark jobs hold the `cpu_worker` resource; a build takes no lock but its hash's),
and on a CPU the claims are wall time (`time.perf_counter` around each call) and so is the
reference's. The build child has no CPU limit, no niceness, no pids cgroup. At import this module
forks __PROCS__ processes (default 4) that copy 64 MiB buffers back and forth (the memory bus and
the shared cache: a scheduler's fairness between sessions, `kernel.sched_autogroup_enabled`, does
not share those) for __SECONDS__ s (default 20) and waits for them (nothing is left running when
the build ends, so the build is OK): while it runs, the honest solutions evaluated and the
references timed on the same machine share the cores, the cache and the memory bandwidth with it.
It prints when it burnt (CLOCK_MONOTONIC, one clock for every process of the machine) and at
which priority it ran.
An attacker submits several such solutions (each a new hash, a new build) or one that builds just
under the build timeout (900 s) each time. Its `run` is honest.
Expect (the defence should make it so): an honest solution evaluated, and a reference timed,
while the build runs keep their times (builds wait for the measurement lock, or run at idle
priority in a CPU-limited cgroup, or on cores the measurement does not use).
"""
import os
import time

import torch

_PROCS = int("__PROCS__") if "__PROCS__".isdigit() else 4
_SECONDS = float("__SECONDS__") if "__SECONDS__".replace(".", "", 1).isdigit() else 20.0


def _burn_all():
    pids = []
    t0 = time.monotonic()
    for _ in range(_PROCS):
        pid = os.fork()
        if pid == 0:
            a, b = bytearray(64 << 20), bytearray(64 << 20)
            end = time.monotonic() + _SECONDS
            while time.monotonic() < end:
                b[:] = a  # a memmove of 64 MiB
                a[:] = b
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    t1 = time.monotonic()
    policy = {0: "SCHED_OTHER", 3: "SCHED_BATCH", 5: "SCHED_IDLE"}.get(os.sched_getscheduler(0), "other")
    print(f"BUILD BURNER REPORT {_PROCS} processes burnt from {t0:.3f} to {t1:.3f} (monotonic, {t1 - t0:.1f} s); "
          f"policy {policy} nice {os.nice(0)}", flush=True)


_burn_all()


def run(x, weight, eps):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
