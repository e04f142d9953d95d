"""Public tracing API: enable_tracing (also a context manager) and disable_tracing."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Optional, Union

from flashinfer_bench import env

from . import _state, exit_hooks
from .config import TracingConfig, TracingConfigRegistry
from .runtime import TracingRuntime


def enable_tracing(
    tracing_configs: Union[None, TracingConfig, TracingConfigRegistry, Mapping[str, TracingConfig]] = None,
    dataset_dir: Union[str, Path, None] = None,
    *,
    dataset_path: Union[str, Path, None] = None,
    tracing_config: Union[None, TracingConfig, TracingConfigRegistry, Mapping[str, TracingConfig]] = None,
    max_queue: int = 4096,
    max_pending_bytes: int = 1 << 30,
    flush_interval_s: float = 0.05,
) -> TracingRuntime:
    """Record calls of @apply functions as workloads of the dataset at `dataset_dir`.

    tracing_configs: None (every definition of the dataset, default TracingConfig), one
    TracingConfig for all, or {definition name: TracingConfig} for just those (or 0.1.2's
    TracingConfigRegistry). The dataset defaults to FLASHINFER_BENCH_DATASET_PATH /
    FIB_DATASET_PATH, else ./flashinfer-trace.
    `dataset_path=` and `tracing_config=` are upstream's spellings, and so is its positional
    order, `enable_tracing(dataset_path, tracing_config)` (told apart by the first argument being
    a path). Problems (no definitions/, an unwritable directory) give one TracingWarning and a
    runtime that traces nothing.
    """
    if isinstance(tracing_configs, (str, os.PathLike)):  # 0.1.2's positional order
        tracing_configs, dataset_dir = dataset_dir, tracing_configs  # type: ignore[assignment]
    root = dataset_dir if dataset_dir is not None else dataset_path
    configs = tracing_configs if tracing_configs is not None else tracing_config
    rt = TracingRuntime(
        Path(root) if root is not None else env.dataset_path(),
        configs,
        max_queue=max_queue,
        max_pending_bytes=max_pending_bytes,
        flush_interval_s=flush_interval_s,
    )
    exit_hooks.install(flush_all)
    _state.STACK.append(rt)
    _state.refresh()
    return rt


def disable_tracing() -> None:
    """Flush and stop the most recent tracing runtime."""
    if _state.STACK:
        _state.pop(_state.STACK[-1])


def flush_all() -> None:
    """Write every queued call of every active runtime (atexit and signal handlers call this)."""
    for rt in list(_state.STACK):
        rt.flush()


def active_runtime() -> Optional[TracingRuntime]:
    return _state.TRACER
