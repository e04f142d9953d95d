"""Resource limits a runner and a build share that the kernel counts per user, not per process.

A runner's user namespace maps it to the host's user, so what the kernel counts per user is
shared with every other process of that user (the worker, the pipeline, other runners).
"""
from __future__ import annotations

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
