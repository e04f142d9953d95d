"""Environment variables: the seeds' names and upstream's FIB_* aliases."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


def _first(*names: str) -> Optional[str]:
    for n in names:
        v = os.environ.get(n)
        if v not in (None, ""):
            return v
    return None


def _truthy(v: Optional[str]) -> bool:
    return (v or "").strip().lower() in ("1", "true", "yes", "on")


def dataset_path(default: str = "./flashinfer-trace") -> Path:
    return Path(_first("FLASHINFER_BENCH_DATASET_PATH", "FIB_DATASET_PATH") or default)


def cache_path() -> Path:
    v = _first("FIB_CACHE_PATH", "FLASHINFER_BENCH_CACHE_PATH")
    if v:
        return Path(v)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "flashinfer_bench"


def tracing_enabled() -> bool:
    return _truthy(_first("FLASHINFER_BENCH_ENABLE_TRACING", "FIB_ENABLE_TRACING"))


def apply_enabled() -> bool:
    return _truthy(_first("FLASHINFER_BENCH_ENABLE_APPLY", "FIB_ENABLE_APPLY"))


# FlashInfer-Bench 0.1.2's names for the same settings (its defaults differ: the seeds' win)
def get_fib_dataset_path() -> Path:
    return dataset_path()


def get_fib_cache_path() -> Path:
    return cache_path()


def get_fib_enable_apply() -> bool:
    return apply_enabled()


def get_fib_enable_tracing() -> bool:
    return tracing_enabled()


def unwritable(path: Path, what: str, remedy: str) -> Optional[str]:
    """Why `path` cannot hold our files (None when it can): checked before a run starts, so that an
    unwritable directory is one message and a non-zero exit instead of a failed trace per
    evaluation written into the dataset (issue 17)."""
    probe = Path(path) / f".fib-write-test-{os.getpid()}"
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        return f"{what} {path} is not writable ({e.strerror or type(e).__name__}): {remedy}"
    return None


def run_directory_problems(workers: Path, results: Optional[Path] = None, cache: Optional[Path] = None) -> list:
    """The directories a run writes to, each checked with `unwritable` (workers: the per-device
    workers' sockets and logs; results: the pipeline's per-job outputs; cache: built artifacts)."""
    checks = [
        (results, "the results directory", "pass --results DIR"),
        (cache or cache_path(), "the artifact cache", "set FIB_CACHE_PATH to a writable directory"),
        (workers, "the worker directory", "set FIB_WORKER_DIR to a writable local directory"),
    ]
    return [w for p, what, remedy in checks if p is not None for w in [unwritable(p, what, remedy)] if w]
