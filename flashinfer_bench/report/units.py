"""How a person sees one number: latency in microseconds, speedups with significant digits,
workloads by their axes. One place, used by `run`'s progress lines and summary, every `report`
text/Markdown/HTML table and the plots.

Standard library only and no package imports: the benchmark job's thin client loads this file by
path (it runs without site-packages). Traces store milliseconds (`latency_ms`, the FlashInfer
Trace format); people read microseconds, which is what a kernel engineer quotes. CSV and JSON
keep the raw milliseconds in columns named `*_ms`.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

LATENCY_UNIT = "us"  # text (terminals, logs, CSV headers of people's tables)
LATENCY_UNIT_HTML = "µs"  # HTML and plots


def _finite(v: Any) -> bool:
    if isinstance(v, bool) or v is None:
        return False
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def fmt_us(ms: Any) -> str:
    """A latency given in milliseconds, as microseconds with 3-4 significant digits and no
    exponent: 0.0041 -> "4.10", 0.0524 -> "52.4", 0.938 -> "938", 260.44 -> "260,440". "" when
    missing."""
    if not _finite(ms):
        return ""
    us = float(ms) * 1e3
    a = abs(us)
    if a >= 1000:
        return f"{us:,.0f}"
    if a >= 100:
        return f"{us:.0f}"
    if a >= 10:
        return f"{us:.1f}"
    if a >= 0.01 or a == 0:
        return f"{us:.2f}"
    return f"{us:.2g}"


def fmt_latency(ms: Any, unit: str = LATENCY_UNIT) -> str:
    """fmt_us with its unit: "4.10 us"; "" when missing."""
    text = fmt_us(ms)
    return f"{text} {unit}" if text else ""


def fmt_speedup(x: Any) -> str:
    """A speedup (or any ratio) that never reads 0.00x: "2.03x", "0.85x", "12.5x", "1,234x"; two
    significant digits below 0.1 ("0.0049x"); "<0.0001x" below that. "" when missing."""
    if not _finite(x):
        return ""
    v = float(x)
    a = abs(v)
    if a == 0:
        return "0x"
    if a >= 100:
        return f"{v:,.0f}x"
    if a >= 10:
        return f"{v:.1f}x"
    if a >= 0.1:
        return f"{v:.2f}x"
    if a >= 0.0001:
        return f"{v:.2g}x"
    return "<0.0001x" if v > 0 else f"{v:.1e}x"


def workload_label(axes: Mapping[str, Any], fallback: str = "") -> str:
    """A workload by its axes, as a person reads it: "batch_size=64,num_pages=300000"; the
    fallback (an uuid) only when it has no axes."""
    if not axes:
        return fallback
    return ",".join(f"{k}={v}" for k, v in axes.items())


def shorten(text: str, width: int) -> str:
    """text cut to `width` characters with an ellipsis in the middle (both ends of a kernel
    name tell solutions apart: gqa_paged_decode_ps1_triton -> gqa_paged…ps1_triton)."""
    text = str(text)
    if width <= 0 or len(text) <= width:
        return text
    if width <= 3:
        return text[:width]
    head = (width - 1 + 1) // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")
