"""Process-global switches read on every decorated call.

Kept in one tiny module so the hot path reads two module attributes and nothing else when
neither apply nor tracing is active.
"""
from __future__ import annotations

from typing import Any, Optional

# The active ApplyRuntime (flashinfer_bench.apply.runtime) or None.
APPLY: Optional[Any] = None
# The active TracingRuntime (flashinfer_bench.tracing.runtime) or None.
TRACER: Optional[Any] = None
# True until the first decorated call has looked at the FIB_ENABLE_* environment variables.
ENV_PENDING: bool = True
