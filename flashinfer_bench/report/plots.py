"""PNG plots for one (definition, hardware) group: latency, speedup and share of peak bandwidth
against the batch axis (the definition's first var axis), one line per solution.

Uses matplotlib's object API with the Agg canvas (no pyplot, no display, no global state), so it
runs headless and in parallel jobs.
"""
from __future__ import annotations

import io
import math
from typing import Dict, Optional

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

MARKERS = "os^Dvp*hX<>"
PLOT_KINDS = ("latency", "speedup", "peak_bw")


def _x(sub: pd.DataFrame) -> tuple:
    """x values and label: the batch axis when every row has one, else the workload's rank."""
    axis = sub["batch_axis"].iloc[0] if len(sub) else ""
    if axis and sub["batch"].notna().all():
        return sub["batch"].astype(float), axis
    order = {w: i for i, w in enumerate(dict.fromkeys(sub.sort_values("workload_label")["workload"]))}
    return sub["workload"].map(order).astype(float), "workload #"


def _plain(v: float, _pos: int = 0) -> str:
    return f"{v:g}"


def _minor(v: float, _pos: int = 0) -> str:
    """Label only the 2x and 5x minor ticks, so a range under one decade still has numbers."""
    if v <= 0:
        return ""
    mant = v / 10 ** math.floor(math.log10(v) + 1e-9)
    return f"{v:g}" if round(mant, 6) in (2.0, 5.0) else ""


def _tidy_axes(ax) -> None:
    """Plain-number tick labels: matplotlib's default mathtext labels on log axes render several
    times slower (about 1 s a plot) and read worse."""
    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if scale != "log":
            continue
        axis.set_major_formatter(FuncFormatter(_plain))
        lo, hi = (ax.get_xlim() if axis is ax.xaxis else ax.get_ylim())
        few_decades = lo > 0 and hi / lo < 30 and axis is ax.yaxis
        axis.set_minor_formatter(FuncFormatter(_minor) if few_decades else NullFormatter())


def _png(fig: Figure) -> bytes:
    for ax in fig.axes:
        _tidy_axes(ax)
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _new(title: str) -> tuple:
    # fixed margins: a layout engine would draw every figure twice
    fig = Figure(figsize=(6.4, 4.2), dpi=100)
    fig.subplots_adjust(left=0.13, right=0.97, top=0.87, bottom=0.12)
    ax = fig.subplots()
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    return fig, ax


def _lines(ax, sub: pd.DataFrame, col: str, errors: bool = False) -> int:
    """One marker line per solution, sorted by x; returns how many points were drawn."""
    x, _ = _x(sub)
    sub = sub.assign(_x=x.values)
    drawn = 0
    for i, (sol, g) in enumerate(sub.groupby("solution", sort=True)):
        g = g[np.isfinite(g[col].astype(float))].sort_values("_x")
        if g.empty:
            continue
        y = g[col].astype(float).values
        kw = dict(marker=MARKERS[i % len(MARKERS)], label=sol, linewidth=1.2, markersize=4)
        if errors and g["latency_ms_p10"].notna().all() and g["latency_ms_p90"].notna().all():
            lo = np.clip(y - g["latency_ms_p10"].astype(float).values, 0, None)
            hi = np.clip(g["latency_ms_p90"].astype(float).values - y, 0, None)
            ax.errorbar(g["_x"].values, y, yerr=[lo, hi], capsize=2, **kw)
        else:
            ax.plot(g["_x"].values, y, **kw)
        drawn += len(g)
    return drawn


def _log_x(ax, sub: pd.DataFrame) -> None:
    x, label = _x(sub)
    ax.set_xlabel(label)
    if label != "workload #" and (x > 0).all() and x.nunique() > 1:
        ax.set_xscale("log", base=2)


def latency_plot(sub: pd.DataFrame, title: str) -> Optional[bytes]:
    """Median latency per solution (p10-p90 bars where recorded) and the reference, log-log."""
    timed = sub[sub["timed"]]
    if timed.empty:
        return None
    fig, ax = _new(f"{title}\nlatency")
    _lines(ax, timed, "latency_ms", errors=True)
    ref = timed.groupby("workload").agg(ref=("reference_latency_ms", "median"), batch=("batch", "first"))
    x, _ = _x(timed)
    xs = pd.Series(x.values, index=timed["workload"].values).groupby(level=0).first()
    ref = ref.assign(_x=xs.reindex(ref.index).values).dropna().sort_values("_x")
    if not ref.empty:
        ax.plot(ref["_x"], ref["ref"], "k--", linewidth=1, label="reference")
    _log_x(ax, timed)
    if (timed["latency_ms"] > 0).all():
        ax.set_yscale("log")
    ax.set_ylabel("latency (ms, median)")
    ax.legend(fontsize=7)
    return _png(fig)


def speedup_plot(sub: pd.DataFrame, title: str) -> Optional[bytes]:
    """Speedup over the definition's reference per solution; 1x marked."""
    timed = sub[sub["timed"] & sub["speedup"].notna()]
    if timed.empty:
        return None
    fig, ax = _new(f"{title}\nspeedup vs reference")
    _lines(ax, timed, "speedup")
    ax.axhline(1.0, color="k", linestyle="--", linewidth=1)
    _log_x(ax, timed)
    sp = timed["speedup"].astype(float)
    if sp.max() / sp.min() > 20:  # a 100x-slower interpreter run next to a real kernel
        ax.set_yscale("log")
    ax.set_ylabel("speedup vs reference (x)")
    ax.legend(fontsize=7)
    return _png(fig)


def peak_bw_plot(sub: pd.DataFrame, title: str) -> Optional[bytes]:
    """Share of the device's peak DRAM bandwidth per solution; None when the peak is unknown."""
    timed = sub[sub["timed"] & sub["pct_of_peak_bw"].notna()]
    if timed.empty:
        return None
    fig, ax = _new(f"{title}\nshare of peak DRAM bandwidth")
    _lines(ax, timed, "pct_of_peak_bw")
    ax.axhline(100.0, color="r", linestyle=":", linewidth=1)
    _log_x(ax, timed)
    ax.set_ylabel("% of peak DRAM bandwidth")
    top = float(timed["pct_of_peak_bw"].max())
    ax.set_ylim(0, max(105.0, top * 1.05) if math.isfinite(top) else 105.0)
    ax.legend(fontsize=7)
    return _png(fig)


def group_plots(sub: pd.DataFrame, title: str) -> Dict[str, Optional[bytes]]:
    """All plots of one (definition, hardware) group, by kind; None where there is nothing to plot."""
    return {
        "latency": latency_plot(sub, title),
        "speedup": speedup_plot(sub, title),
        "peak_bw": peak_bw_plot(sub, title),
    }
