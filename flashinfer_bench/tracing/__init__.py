"""Tracing: capture the workloads a real program runs, into a dataset, without slowing it.

    FLASHINFER_BENCH_ENABLE_TRACING=1 python run_engine.py            # env (FIB_ENABLE_TRACING too)
    with fb.enable_tracing(tracing_configs={...}, dataset_dir=...):   # in code
        run_engine()

Calls of @apply("<definition>") functions whose definition is in the dataset become lines of
workloads/<op_type>/<definition>.jsonl, tensors (per the dump policy) go to
blob/workloads/<op_type>/<definition>/<definition>_<uuid>.safetensors; a background thread writes.
"""
from .api import active_runtime, disable_tracing, enable_tracing, flush_all
from .config import TracingConfig, TracingConfigRegistry
from .runtime import TracingRuntime
from .writer import TracingWarning

__all__ = [
    "TracingConfig", "TracingConfigRegistry", "TracingRuntime", "TracingWarning", "active_runtime", "disable_tracing",
    "enable_tracing", "flush_all",
]
