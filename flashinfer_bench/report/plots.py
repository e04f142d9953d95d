"""SVG plots for one (definition, hardware) group: latency, speedup and share of peak bandwidth
against the batch axis (the definition's first var axis), one line per solution.

Drawn by the standard-library writer in svgplot (no matplotlib: importing it and drawing with it
cost seconds on the report's critical path). Each plot is a standalone SVG document, as UTF-8
bytes; None where there is nothing to plot.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .svgplot import HLine, Plot, Series, render

MARKERS = "os^Dvp*hX<>"
PLOT_KINDS = ("latency", "speedup", "peak_bw")
EXT = "svg"
MIME = "image/svg+xml"
COLUMNS = ("workload", "workload_label", "solution", "batch", "batch_axis", "timed", "latency_ms",
           "latency_ms_p10", "latency_ms_p90", "reference_latency_ms", "speedup", "pct_of_peak_bw")

Row = Mapping[str, Any]
Rows = Union[Sequence[Row], Any]  # records, or a DataFrame with the COLUMNS


def records(sub: Rows) -> List[Row]:
    """The rows of a traces frame (or of a slice of one) as plain dicts with the plotted columns."""
    if hasattr(sub, "columns"):
        from .frame import rows_of

        return rows_of(sub, [c for c in COLUMNS if c in sub.columns])
    return list(sub)


def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def _ok(v: Any) -> bool:
    return math.isfinite(_num(v))


def _x(rows: Sequence[Row]) -> Tuple[Dict[Any, float], str]:
    """x per workload and the axis label: the batch axis when every row has one, else the
    workload's rank by label."""
    axis = rows[0].get("batch_axis") if rows else ""
    if axis and isinstance(axis, str) and all(_ok(r.get("batch")) for r in rows):
        return {r["workload"]: _num(r["batch"]) for r in rows}, axis
    order: Dict[Any, float] = {}
    for r in sorted(rows, key=lambda r: str(r.get("workload_label"))):
        order.setdefault(r["workload"], float(len(order)))
    return order, "workload #"


def _xscale(xs: Dict[Any, float], label: str) -> str:
    vals = list(xs.values())
    if label != "workload #" and all(v > 0 for v in vals) and len(set(vals)) > 1:
        return "log2"
    return "linear"


def _lines(rows: Sequence[Row], xs: Dict[Any, float], col: str, errors: bool = False, scale: float = 1.0) -> List[Series]:
    """One marker line per solution (sorted by name), points sorted by x."""
    by_sol: Dict[str, List[Row]] = {}
    for r in rows:
        by_sol.setdefault(str(r["solution"]), []).append(r)
    out = []
    for i, sol in enumerate(sorted(by_sol)):
        g = sorted((r for r in by_sol[sol] if _ok(r.get(col))), key=lambda r: xs[r["workload"]])
        if not g:
            continue
        s = Series(sol, [xs[r["workload"]] for r in g], [_num(r[col]) * scale for r in g], marker=MARKERS[i % len(MARKERS)])
        if errors and all(_ok(r.get("latency_ms_p10")) and _ok(r.get("latency_ms_p90")) for r in g):
            s.lo = [min(_num(r["latency_ms_p10"]) * scale, y) for r, y in zip(g, s.y)]
            s.hi = [max(_num(r["latency_ms_p90"]) * scale, y) for r, y in zip(g, s.y)]
        out.append(s)
    return out


def _median(vals: Iterable[float]) -> float:
    v = sorted(x for x in vals if _ok(x))
    if not v:
        return math.nan
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _svg(p: Plot) -> bytes:
    return render(p).encode("utf-8")


def latency_plot(sub: Rows, title: str) -> Optional[bytes]:
    """Median latency per solution (p10-p90 bars where recorded) and the reference, log-log.
    In microseconds when every value is under a millisecond."""
    rows = [r for r in records(sub) if r.get("timed")]
    if not rows:
        return None
    xs, label = _x(rows)
    values = [_num(r.get(c)) for r in rows for c in ("latency_ms", "latency_ms_p90", "reference_latency_ms")]
    top = max((v for v in values if math.isfinite(v)), default=math.nan)
    us = math.isfinite(top) and top < 1.0
    scale = 1000.0 if us else 1.0
    series = _lines(rows, xs, "latency_ms", errors=True, scale=scale)
    ref: Dict[Any, List[float]] = {}
    for r in rows:
        ref.setdefault(r["workload"], []).append(_num(r.get("reference_latency_ms")))
    pts = sorted((xs[w], _median(v)) for w, v in ref.items())
    pts = [(x, y) for x, y in pts if math.isfinite(x) and math.isfinite(y)]
    if pts:
        series.append(Series("reference", [x for x, _ in pts], [y * scale for _, y in pts],
                             color="#000000", marker=None, dash="dashed", width=1.3))
    ylog = all(_num(r.get("latency_ms")) > 0 for r in rows)
    return _svg(Plot(series, f"{title}\nlatency", label, f"latency ({'µs' if us else 'ms'}, median)",
                     xscale=_xscale(xs, label), yscale="log" if ylog else "linear"))


def speedup_plot(sub: Rows, title: str) -> Optional[bytes]:
    """Speedup over the definition's reference per solution; 1x marked."""
    rows = [r for r in records(sub) if r.get("timed") and _ok(r.get("speedup"))]
    if not rows:
        return None
    xs, label = _x(rows)
    sp = [_num(r["speedup"]) for r in rows]
    ylog = min(sp) > 0 and max(sp) / min(sp) > 20  # a 100x-slower interpreter run next to a real kernel
    return _svg(Plot(_lines(rows, xs, "speedup"), f"{title}\nspeedup vs reference", label,
                     "speedup vs reference (x)", xscale=_xscale(xs, label), yscale="log" if ylog else "linear",
                     hlines=[HLine(1.0, "#000000", "dashed")]))


def peak_bw_plot(sub: Rows, title: str) -> Optional[bytes]:
    """Share of the device's peak DRAM bandwidth per solution; None when the peak is unknown."""
    rows = [r for r in records(sub) if r.get("timed") and _ok(r.get("pct_of_peak_bw"))]
    if not rows:
        return None
    xs, label = _x(rows)
    top = max(_num(r["pct_of_peak_bw"]) for r in rows)
    return _svg(Plot(_lines(rows, xs, "pct_of_peak_bw"), f"{title}\nshare of peak DRAM bandwidth", label,
                     "% of peak DRAM bandwidth", xscale=_xscale(xs, label),
                     ylim=(0.0, max(105.0, top * 1.05)), hlines=[HLine(100.0, "#d62728", "dotted", 1.4)]))


def group_plots(sub: Rows, title: str) -> Dict[str, Optional[bytes]]:
    """All plots of one (definition, hardware) group, by kind; None where there is nothing to plot."""
    rows = records(sub)
    return {
        "latency": latency_plot(rows, title),
        "speedup": speedup_plot(rows, title),
        "peak_bw": peak_bw_plot(rows, title),
    }
