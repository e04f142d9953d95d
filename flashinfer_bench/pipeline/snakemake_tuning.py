"""The workflow's only changes to Snakemake's internals: two, each one function here (issue 16).

Both save a measured amount (benchmarks/snakemake_tuning.py, benchmarks/measured/
2026-11-23-snakemake-tuning.md: a no-op run 1.03 -> 0.86 s, a run of one job 2.42 -> 1.27 s) and
Snakemake has no documented setting for either: `--max-jobs-per-timespan` cannot go below one
second, and dropping params as a rerun trigger would stop a source edit from re-running its build.
Each applies only on the Snakemake versions it was checked on (`CHECKED`: the code it changes is
the same in 9.0.0, 9.16.3 and 9.27.1; the pipeline tests pass on 9.16.3 and 9.27.1) and is a
no-op with one `[flashinfer-bench] note:` line on stderr where those internals are missing: the
run is then as Snakemake makes it, only slower. `FIB_SNAKEMAKE_TUNING=0` turns both off, a part's
name (`pandas`, `timers`) keeps only that one.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Optional, Tuple

CHECKED: Tuple[Tuple[int, int], Tuple[int, int]] = ((9, 0), (9, 27))  # Snakemake minor versions, inclusive
SWITCH = "FIB_SNAKEMAKE_TUNING"
PARTS = ("pandas", "timers")
_noted: set = set()


def _note(msg: str) -> None:
    """One line on stderr, once per process."""
    if msg not in _noted:
        _noted.add(msg)
        print(f"[flashinfer-bench] note: {msg}", file=sys.stderr)


def _snakemake_version() -> Optional[str]:
    try:
        from snakemake import __version__
    except ImportError:
        return None
    return str(__version__)


def _minor(version: str) -> Optional[Tuple[int, int]]:
    parts = version.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def tuning_applies(part: str, version: Optional[str] = None) -> bool:
    """False when `part` (one of PARTS) is switched off, or on a Snakemake these changes were not
    checked on (said once)."""
    switch = os.environ.get(SWITCH, "1").strip()
    if switch != "1" and part not in {p.strip() for p in switch.split(",")}:
        return False
    version = version or _snakemake_version()
    if version is None:
        return False
    minor = _minor(version)
    if minor is None or not CHECKED[0] <= minor <= CHECKED[1]:
        lo, hi = (f"{a}.{b}" for a, b in CHECKED)
        _note(f"Snakemake {version} is outside the versions its start-up tuning was checked on "
              f"({lo}-{hi}): running without it (correct, up to ~1 s slower per run; "
              "flashinfer_bench/pipeline/snakemake_tuning.py)")
        return False
    return True


def lazy_pandas_params() -> bool:
    """Snakemake compares each job's params with the last run's, and when pandas is installed it
    imports pandas (0.3-0.5 s) to ask whether a param is a DataFrame/Series/Index. A value can
    only be one of those if pandas is already imported, so ask pandas only then: the comparison
    is the same, and a run whose Snakemake does not import pandas otherwise no longer does.
    Returns whether the change is in place."""
    if not tuning_applies("pandas"):
        return False
    cls = _persistence_class()
    original = getattr(cls, "_serialize_param_pandas", None)
    builtin = getattr(cls, "_serialize_param_builtin", None)
    if cls is None or not callable(original) or not callable(builtin):
        _note("this Snakemake's persistence has no _serialize_param_pandas/_builtin: params are "
              "compared as Snakemake does (importing pandas when installed)")
        return False
    if getattr(original, "_fib_lazy", False):
        return True

    def serialize_param(self, value):
        if "pandas" in sys.modules:
            return original(self, value)
        return builtin(self, value)

    serialize_param._fib_lazy = True  # type: ignore[attr-defined]
    cls._serialize_param_pandas = serialize_param
    return True


def _persistence_class() -> Optional[type]:
    """The class that serialises params: `Persistence` up to 9.16, `PersistenceBase` (of the file
    and SQLite backends) in 9.27."""
    try:
        import snakemake.persistence as sp
    except ImportError:
        return None
    for name in ("PersistenceBase", "Persistence"):
        cls = getattr(sp, name, None)
        if isinstance(cls, type) and "_serialize_param_pandas" in vars(cls):
            return cls
    return None


_REEVALUATION = "_schedule_reevalutation"  # sic: Snakemake's spelling


def _scheduler_class() -> Optional[type]:
    for module, name in (("snakemake.scheduling.job_scheduler", "JobScheduler"),  # 9.16, 9.27
                         ("snakemake.scheduler", "JobScheduler")):  # 9.0
        mod = sys.modules.get(module)
        if mod is not None and hasattr(mod, name):
            return getattr(mod, name)
    return None


def cancel_rescheduling_timers() -> int:
    """After each scheduling round that started jobs, Snakemake's job-rate limiter starts a
    `threading.Timer` (`JobScheduler._schedule_reevalutation`) that wakes the scheduler one
    timespan later (1 s by default, and the setting cannot go lower). The timer is not a daemon
    thread, so the finished run's process waits for it before it exits: up to 1 s at the end of
    every run that ran a job. Called from onsuccess/onerror, when the scheduler is done and a
    wake-up has nothing left to do; cancels only those timers. Returns how many it cancelled."""
    if not tuning_applies("timers"):
        return 0
    sched = _scheduler_class()
    if sched is not None and not callable(getattr(sched, _REEVALUATION, None)):
        _note(f"this Snakemake's JobScheduler has no {_REEVALUATION}: the run ends when its last "
              "rescheduling timer fires (up to 1 s)")
        return 0
    n = 0
    for t in threading.enumerate():
        func = getattr(t, "function", None)
        if (isinstance(t, threading.Timer) and t.is_alive()
                and f".{_REEVALUATION}.<locals>." in getattr(func, "__qualname__", "")):
            t.cancel()
            n += 1
    return n

