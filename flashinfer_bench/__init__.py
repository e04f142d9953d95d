"""FlashInfer-Bench, Snakemake-native: kernel definitions, solutions, workloads and traces.

Heavy parts (torch, the evaluator, apply) load lazily so that `import flashinfer_bench` and the
pipeline's DAG construction stay fast.
"""
from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__version__ = "0.2.0"

_LAZY = {
    # lazy too: pydantic's import (~0.35 s) would delay every `flashinfer-bench` command's start
    "TraceSet": "flashinfer_bench.data",
    "Benchmark": "flashinfer_bench.bench.benchmark",
    "BenchmarkConfig": "flashinfer_bench.bench.config",
    "enable_apply": "flashinfer_bench.apply",
    "disable_apply": "flashinfer_bench.apply",
    "apply": "flashinfer_bench.apply",
    "enable_tracing": "flashinfer_bench.tracing",
    "disable_tracing": "flashinfer_bench.tracing",
    "TracingConfig": "flashinfer_bench.tracing",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'flashinfer_bench' has no attribute {name!r}")


__all__ = ["TraceSet", "__version__", *_LAZY]


class _Package(types.ModuleType):
    """Keeps `flashinfer_bench.apply` the function of the seeds (`from flashinfer_bench import
    apply`) after the `flashinfer_bench.apply` subpackage is imported: the import system would
    otherwise bind the subpackage over the name. The subpackage stays in sys.modules, so
    `from flashinfer_bench.apply import ...` works as usual."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "apply" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
