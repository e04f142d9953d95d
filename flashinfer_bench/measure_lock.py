"""The machine's measurement locks: one file lock per device, shared by every worker version and
worker directory. A worker holds its device's exclusively while it measures; a build holds the
CPU's shared while its child runs solution code, so that no CPU measurement (wall time, the
reference's too) runs beside a build: a build's four processes copying memory at idle CPU
priority still moved the CPU reference timed meanwhile from 0.47 to 0.85 ms (`build_cpu_burner`,
session 24; the cores were theirs, the memory bus was not). Builds do not wait for one another.
Stdlib only: the pipeline's thin benchmark client loads bench/addressing.py, and this, by path."""
from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def measure_lock_dir() -> Path:
    return Path(os.environ.get("FIB_MEASURE_LOCK_DIR") or f"/tmp/fib-measure-{os.getuid()}")


def measure_lock_path(slug: str) -> Path:
    """The lock of device `slug` ('cpu', 'gpu<id>': bench.addressing.device_slug)."""
    return measure_lock_dir() / f"{slug}.measure.lock"


@contextmanager
def held(path: Path, exclusive: bool) -> Iterator[None]:
    """`path`'s file lock held (exclusive or shared) while the block runs; waits for it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def builds_hold_cpu_measurement() -> bool:
    """FIB_BUILD_EXCLUDES_CPU_MEASUREMENT=off lets builds run beside CPU measurements."""
    return os.environ.get("FIB_BUILD_EXCLUDES_CPU_MEASUREMENT", "on").strip().lower() not in ("0", "off", "false", "no")
