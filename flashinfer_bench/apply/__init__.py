"""apply(): route calls of a definition to the fastest correct solution measured on this device.

    enable_apply(dataset_or_trace_set, ApplyConfig(...))   # builds winners ahead of time
    @apply("rmsnorm_d4096")
    def rmsnorm(x, weight, eps): ...                      # body = fallback

`stats()` counts calls per definition and target; `dispatch_table()` shows the decided winners.
"""
from flashinfer_bench.device import hardware_name

from .api import (
    active_runtime,
    apply,
    disable_apply,
    dispatch_table,
    enable_apply,
    reset_stats,
    stats,
)
from .config import ApplyConfig, ApplyConfigRegistry, get_default_registry
from .runtime import FALLBACK, ApplyRuntime, ApplyWarning

__all__ = [
    "FALLBACK", "ApplyConfig", "ApplyRuntime", "ApplyWarning", "active_runtime", "apply",
    "disable_apply", "dispatch_table", "enable_apply", "hardware_name", "reset_stats", "stats",
    "ApplyConfigRegistry", "get_default_registry",  # FlashInfer-Bench 0.1.2's names
]
