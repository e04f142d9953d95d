"""The active tracing runtimes. apply's call sites read TRACER on every call: one module attribute."""
from __future__ import annotations

from typing import Any, List, Optional

# The innermost enabled TracingRuntime (flashinfer_bench.tracing.runtime) that traces something, or None.
TRACER: Optional[Any] = None
# Every enabled runtime, innermost last.
STACK: List[Any] = []


def refresh() -> None:
    global TRACER
    active = [r for r in STACK if r.tracers and not r.closed]
    TRACER = active[-1] if active else None


def pop(rt: Any) -> None:
    """Flush and close `rt`, and trace with the runtime enabled before it (if any)."""
    rt.close()
    if rt in STACK:
        STACK.remove(rt)
    refresh()
