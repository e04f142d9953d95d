"""Process-global switches read on every decorated call, and the enabled apply runtimes.

Kept in one tiny module so the hot path reads module attributes and nothing else when neither
apply nor tracing is active (the tracer's slot is tracing's own: `tracing/_state.py`).
"""
from __future__ import annotations

from typing import Any, List, Optional

# The active ApplyRuntime (flashinfer_bench.apply.runtime) or None.
APPLY: Optional[Any] = None
# True until the first decorated call has looked at the FIB_ENABLE_* environment variables.
ENV_PENDING: bool = True
# Every enabled runtime, innermost last; and the last one enabled (stats() after disable).
STACK: List[Any] = []
LAST: Optional[Any] = None


def push(rt: Any) -> None:
    global APPLY, LAST
    STACK.append(rt)
    APPLY = LAST = rt


def pop(rt: Any) -> None:
    """Stop routing through `rt`; the runtime enabled before it (if any) routes again."""
    global APPLY
    if rt in STACK:
        STACK.remove(rt)
    APPLY = STACK[-1] if STACK else None
