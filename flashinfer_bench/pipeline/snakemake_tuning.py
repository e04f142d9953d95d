"""Start-up costs of Snakemake that this workflow does not need, removed from inside the Snakefile.

Each change keeps Snakemake's behaviour exactly and is skipped (the run is then only slower) when
the Snakemake version lacks what it changes; pyproject pins the versions it was checked on.
"""
from __future__ import annotations

import sys


def lazy_pandas_params() -> bool:
    """Snakemake compares each job's params with the last run's, and when pandas is installed it
    imports pandas (0.4-0.5 s) to ask whether a param is a DataFrame/Series/Index. A value can
    only be one of those if pandas is already imported, so ask pandas only then. Our params are
    strings and dicts: a no-op run of the example dataset no longer imports pandas."""
    try:
        from snakemake.persistence import Persistence
    except ImportError:
        return False
    original = getattr(Persistence, "_serialize_param_pandas", None)
    builtin = getattr(Persistence, "_serialize_param_builtin", None)
    if original is None or builtin is None or getattr(original, "_fib_lazy", False):
        return False

    def serialize_param(self, value):
        if "pandas" in sys.modules:
            return original(self, value)
        return builtin(self, value)

    serialize_param._fib_lazy = True  # type: ignore[attr-defined]
    Persistence._serialize_param_pandas = serialize_param
    return True


def cancel_rescheduling_timers() -> int:
    """After each scheduling round Snakemake's job-rate limiter starts a `threading.Timer` that
    wakes the scheduler one timespan later (1 s by default). The timer is not a daemon thread, so
    the finished run's process waits for the last one before it exits: ~1 s at the end of every
    run. Called from onsuccess/onerror, when the scheduler is done and a wake-up has nothing left
    to do. Returns how many timers were cancelled."""
    import threading

    n = 0
    for t in threading.enumerate():
        if isinstance(t, threading.Timer) and t.is_alive():
            t.cancel()
            n += 1
    return n
