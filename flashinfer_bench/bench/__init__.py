"""Trustworthy evaluation: inputs, correctness, GPU timing, roofline, the per-device worker.

Importing this package does not import torch; the runner side (inputs, correctness, timing,
roofline, environment, evaluate, runner) does, and only runs inside the worker's runner process
(or in tests).
"""
from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "EvalConfig": "flashinfer_bench.bench.config",
    "BenchmarkConfig": "flashinfer_bench.bench.config",
    "Benchmark": "flashinfer_bench.bench.benchmark",
    "evaluate_via_worker": "flashinfer_bench.bench.client",
    "shutdown_worker": "flashinfer_bench.bench.client",
    "ping_worker": "flashinfer_bench.bench.client",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'flashinfer_bench.bench' has no attribute {name!r}")


__all__ = list(_LAZY)
