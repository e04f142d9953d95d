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

_DATA_NAMES = (
    # FlashInfer-Bench 0.1.2's top-level data names (pydantic models: loaded on first use)
    "AxisConst", "AxisVar", "BuildSpec", "Correctness", "Definition", "Environment", "Evaluation",
    "EvaluationStatus", "Performance", "RandomInput", "SafetensorsInput", "ScalarInput", "Solution",
    "SourceFile", "SupportedLanguages", "TensorSpec", "Trace", "Workload",
)

_LAZY = {
    # lazy too: pydantic's import (~0.35 s) would delay every `flashinfer-bench` command's start
    "TraceSet": "flashinfer_bench.data",
    **{name: "flashinfer_bench.data" for name in _DATA_NAMES},
    "Benchmark": "flashinfer_bench.bench.benchmark",
    "BenchmarkConfig": "flashinfer_bench.bench.config",
    "enable_apply": "flashinfer_bench.apply",
    "disable_apply": "flashinfer_bench.apply",
    "ApplyConfig": "flashinfer_bench.apply",
    "ApplyConfigRegistry": "flashinfer_bench.apply",
    "enable_tracing": "flashinfer_bench.tracing",
    "disable_tracing": "flashinfer_bench.tracing",
    "TracingConfig": "flashinfer_bench.tracing",
    "TracingConfigRegistry": "flashinfer_bench.tracing",
    "FFI_PROMPT": "flashinfer_bench.agents",
    "FFI_PROMPT_SIMPLE": "flashinfer_bench.agents",
}


def __getattr__(name: str) -> Any:
    if name == "apply":  # the package, callable as the decorator (see _CallablePackage)
        return importlib.import_module("flashinfer_bench.apply")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'flashinfer_bench' has no attribute {name!r}")


__all__ = ["__version__", "apply", *_LAZY]


class _CallablePackage(types.ModuleType):
    """`flashinfer_bench.apply` is the apply package and, called, the `apply()` decorator.

    The seeds use `from flashinfer_bench import apply` as the decorator and the README
    `flashinfer_bench.apply.stats()`; the import system binds the subpackage to the name `apply`
    as soon as anything imports it, so the name can only serve both as a package whose call is
    `flashinfer_bench.apply.apply(...)`. `from flashinfer_bench.apply import apply` is the plain
    function."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__dict__["apply"](*args, **kwargs)


class _Package(types.ModuleType):
    """Makes the `flashinfer_bench.apply` subpackage callable when it is bound here (by any import
    of it, or by `__getattr__` above)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "apply" and isinstance(value, types.ModuleType) and type(value) is types.ModuleType:
            value.__class__ = _CallablePackage
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
