"""Build solutions into cached artifacts and load them (see docs/internals.md, `compile`).

    build(solution, definition, cache_dir=None) -> BuildResult     # never raises for a bad solution
    load_runnable(artifact_dir, definition) -> Runnable
    default_cache_dir() -> Path                                    # $FIB_CACHE_PATH or ~/.cache/flashinfer_bench

Importing this package and calling build() do not import torch (a cache hit reads one JSON file);
load_runnable and Runnable do.
"""
from __future__ import annotations

import importlib
from typing import Any

from .build import build
from .cache import default_cache_dir
from .result import COMPILE_ERROR, OK, SKIPPED, BuildResult

_LAZY = {
    "load_runnable": "flashinfer_bench.compile.load",
    "Runnable": "flashinfer_bench.compile.runnable",
    "LoadError": "flashinfer_bench.compile.runnable",
    "OutputMismatch": "flashinfer_bench.compile.runnable",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'flashinfer_bench.compile' has no attribute {name!r}")


__all__ = [
    "BuildResult", "COMPILE_ERROR", "LoadError", "OK", "OutputMismatch", "Runnable", "SKIPPED",
    "build", "default_cache_dir", "load_runnable",
]
