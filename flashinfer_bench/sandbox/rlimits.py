"""Resource limits a runner and a build share that the kernel counts per user, not per process,
and the lowest scheduling priority a build runs at.

A runner's user namespace maps it to the host's user, so what the kernel counts per user is
shared with every other process of that user (the worker, the pipeline, other runners).
"""
from __future__ import annotations

import os
import resource

# queued signals: POSIX timers take from the same count, and a parked runner that queued 96291
# real-time signals (all of its user's) left every other process of that user with EAGAIN from
# timer_create (`user_quota_parked`); the kernel checks the queuing process's own limit
SIGPENDING = 1024


def limit_queued_signals() -> int:
    """Lower RLIMIT_SIGPENDING (soft and hard) to SIGPENDING; the limit now in force."""
    _, hard = resource.getrlimit(resource.RLIMIT_SIGPENDING)
    n = SIGPENDING if hard == resource.RLIM_INFINITY else min(SIGPENDING, hard)
    resource.setrlimit(resource.RLIMIT_SIGPENDING, (n, n))
    return n


def lowest_priority() -> str:
    """Run this process, and every thread and process it starts, at the scheduler's lowest
    priority: SCHED_IDLE (else nice 19), and its session's autogroup at nice 19 (with autogroups
    on, a nice value ranks a task only within its own session: a build runs in a session of its
    own). A build runs solution code at import; four processes of it copying memory for 15 s
    shared the cores with the evaluation and the reference measured meanwhile (`build_cpu_burner`).
    What was applied, for the build's record."""
    done = []
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        done.append("SCHED_IDLE")
    except (OSError, AttributeError) as e:
        try:
            os.nice(19 - os.nice(0))
            done.append("nice 19")
        except OSError:
            done.append(f"no lower priority ({e})")
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("19")
        done.append("autogroup nice 19")
    except OSError:
        pass
    return ", ".join(done)
