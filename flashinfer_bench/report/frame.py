"""Flatten a TraceSet into one pandas DataFrame: one row per result trace.

Every table and plot of the report is a view of this frame, grouped by (definition, hardware):
results of different devices are never mixed. Missing measurements (traces written by
FlashInfer-Bench 0.1.2, failed traces, NaN latencies) become NaN / empty cells, never errors.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

import pandas as pd

from flashinfer_bench.data import Definition, EvaluationStatus, ShapeError, Trace, TraceSet

from .roofline import achieved, datasheet_peak_gbps, measured_peaks, percent
from .units import workload_label


# Columns of the frame, in order (also the columns of an empty frame).
COLUMNS = [
    "definition", "op_type", "definition_known", "solution", "author", "language",
    "solution_known", "is_baseline", "hardware", "device", "workload", "workload_label",
    "batch_axis", "batch", "axes", "status", "passed", "timed", "latency_ms",
    "reference_latency_ms", "speedup", "speedup_vs_baseline", "max_abs_error", "max_rel_error",
    "latency_ms_p10", "latency_ms_p90", "iqr_ms", "rel_iqr", "samples", "noisy", "suspect",
    "stale", "flags", "bytes", "flops", "achieved_gbps", "achieved_tflops", "peak_gbps", "peak_tflops",
    "peak_source", "pct_of_peak_bw", "pct_of_peak_flops", "timestamp", "log", "environment",
]


def num(x: Any) -> float:
    """A finite-or-NaN float from whatever a JSON field holds (bools and strings are not numbers)."""
    if isinstance(x, bool) or x is None:
        return math.nan
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, str):
        try:
            return float(x)
        except ValueError:
            return math.nan
    return math.nan


def _pos(x: float) -> bool:
    return math.isfinite(x) and x > 0


def batch_axis(definition: Optional[Definition], axes: Dict[str, int]) -> Optional[str]:
    """The axis plotted on x: the definition's first var axis, else the workload's first axis."""
    if definition is not None and definition.var_axes:
        return definition.var_axes[0]
    return next(iter(axes), None)


def _axes_text(axes: Dict[str, int]) -> str:
    return workload_label(axes)


def _bytes_and_flops(definition: Optional[Definition], axes: Dict[str, int]) -> tuple:
    if definition is None:
        return math.nan, math.nan
    var = {a: axes[a] for a in definition.var_axes if a in axes}
    try:
        b = float(definition.bytes_moved(var))
    except (ShapeError, KeyError, ValueError, TypeError):
        b = math.nan
    try:
        f = definition.flop_count(var)
        f = math.nan if f is None else float(f)
    except (ShapeError, KeyError, ValueError, TypeError, NameError, ZeroDivisionError, SyntaxError):
        f = math.nan
    return b, f


def _meta(ts: TraceSet, t: Trace, cache: Dict[Any, Any]) -> tuple:
    """What a row takes from its definition, solution and workload, once per distinct one:
    thousands of traces (devices, re-runs) share a few of each."""
    key = ("s", t.definition, t.solution)
    sol = cache.get(key)
    if sol is None:
        d = ts.get_definition(t.definition)
        s = ts.get_solution(t.solution or "")
        sol = cache[key] = {
            "op_type": d.op_type if d is not None else "", "definition_known": d is not None,
            "author": s.author if s is not None else "", "language": str(s.spec.language) if s is not None else "",
            "solution_known": s is not None, "is_baseline": s is not None and ts.baseline_of(t.definition) is s,
        }
    axes = t.workload.axes
    wkey = ("w", t.definition, t.workload.uuid, tuple(axes.items()))
    wl = cache.get(wkey)
    if wl is None:
        d = ts.get_definition(t.definition)
        ax = dict(axes)
        bax = batch_axis(d, ax)
        b, f = _bytes_and_flops(d, ax)
        wl = cache[wkey] = {
            "workload_label": workload_label(ax, t.workload.uuid[:8]), "batch_axis": bax or "",
            "batch": num(ax.get(bax)) if bax else math.nan, "axes": _axes_text(ax), "_bytes": b, "_flops": f,
        }
    return sol, wl


def _row(ts: TraceSet, t: Trace, cache: Optional[dict] = None) -> Dict[str, Any]:
    ev = t.evaluation
    sol, wl = _meta(ts, t, cache if cache is not None else {})
    extra = dict(ev.extra) if ev is not None else {}
    env = ev.environment if ev is not None else None
    env_extra = dict(env.model_extra or {}) if env is not None else {}
    status = str(ev.status) if ev is not None else "UNKNOWN"
    lat = num(ev.latency_ms) if ev is not None and ev.performance is not None else math.nan
    ref = num(ev.reference_latency_ms) if ev is not None and ev.performance is not None else math.nan
    speed = num(ev.speedup_factor) if ev is not None and ev.performance is not None else math.nan
    if not _pos(speed) and _pos(lat) and _pos(ref):
        speed = ref / lat
    if not _pos(speed):
        speed = math.nan
    passed = ev is not None and ev.status == EvaluationStatus.PASSED
    timed = passed and _pos(lat)
    b, f = wl["_bytes"], wl["_flops"]
    if _pos(num(extra.get("bytes"))):
        b = num(extra.get("bytes"))
    if _pos(num(extra.get("flops"))):
        f = num(extra.get("flops"))
    flags = extra.get("flags") or []
    if not isinstance(flags, list):
        flags = [str(flags)]
    return {
        "definition": t.definition,
        "op_type": sol["op_type"],
        "definition_known": sol["definition_known"],
        "solution": t.solution or "",
        "author": sol["author"],
        "language": sol["language"],
        "solution_known": sol["solution_known"],
        "is_baseline": sol["is_baseline"],
        "hardware": env.hardware if env is not None else "unknown",
        "device": str(env_extra.get("device", "")),
        "workload": t.workload.uuid,
        "workload_label": wl["workload_label"],
        "batch_axis": wl["batch_axis"],
        "batch": wl["batch"],
        "axes": wl["axes"],
        "status": status,
        "passed": passed,
        "timed": timed,
        "latency_ms": lat if _pos(lat) else math.nan,
        "reference_latency_ms": ref if _pos(ref) else math.nan,
        "speedup": speed if timed else math.nan,
        "speedup_vs_baseline": math.nan,
        "max_abs_error": num(ev.max_absolute_error) if ev is not None else math.nan,
        "max_rel_error": num(ev.max_relative_error) if ev is not None else math.nan,
        "latency_ms_p10": num(extra.get("latency_ms_p10")),
        "latency_ms_p90": num(extra.get("latency_ms_p90")),
        "iqr_ms": num(extra.get("iqr_ms")),
        "rel_iqr": num(extra.get("rel_iqr")),
        "samples": num(extra.get("samples")),
        "noisy": bool(extra.get("noisy")) or "noisy" in flags,
        "suspect": bool(extra.get("suspect")),
        "stale": ts.is_stale(t),  # measured another version of its solution (TraceSet.is_stale)
        "flags": ", ".join(str(x) for x in flags),
        "bytes": b,
        "flops": f,
        "achieved_gbps": num(extra.get("achieved_gbps")),
        "achieved_tflops": num(extra.get("achieved_tflops")),
        "peak_gbps": num(extra.get("peak_gbps")),
        "peak_tflops": num(extra.get("peak_tflops")),
        "peak_source": "",
        "pct_of_peak_bw": num(extra.get("pct_of_peak_bw")),
        "pct_of_peak_flops": num(extra.get("pct_of_peak_flops")),
        "timestamp": ev.timestamp if ev is not None else "",
        "log": ev.log if ev is not None else "",
        "environment": ({"hardware": env.hardware, "libs": dict(env.libs), **env_extra} if env is not None else {}),
    }


def _fill_roofline(rows: List[Dict[str, Any]]) -> None:
    """Complete achieved rates and shares of peak where the trace lacks them."""
    bw_peaks = measured_peaks(rows, "peak_gbps")
    fl_peaks = measured_peaks(rows, "peak_tflops")
    for r in rows:
        lat = r["latency_ms"] if r["timed"] else math.nan
        if not _pos(r["achieved_gbps"]):
            r["achieved_gbps"] = achieved(r["bytes"], lat, 1e9)
        if not _pos(r["achieved_tflops"]):
            r["achieved_tflops"] = achieved(r["flops"], lat, 1e12)
        hw = r["hardware"]
        if _pos(r["peak_gbps"]) or _pos(r["pct_of_peak_bw"]):
            r["peak_source"] = "measured"
        elif hw in bw_peaks:
            r["peak_gbps"], r["peak_source"] = bw_peaks[hw], "measured"
        elif datasheet_peak_gbps(hw) is not None:
            r["peak_gbps"], r["peak_source"] = datasheet_peak_gbps(hw), "datasheet"
        if not _pos(r["peak_tflops"]) and hw in fl_peaks:
            r["peak_tflops"] = fl_peaks[hw]
        if not _pos(r["pct_of_peak_bw"]):
            r["pct_of_peak_bw"] = percent(r["achieved_gbps"], r["peak_gbps"])
        if not _pos(r["pct_of_peak_flops"]):
            r["pct_of_peak_flops"] = percent(r["achieved_tflops"], r["peak_tflops"])


def _fill_baseline(df: pd.DataFrame) -> None:
    """speedup_vs_baseline = the definition's baseline's latency / this latency, per workload (a
    definition with several `baseline`-author solutions has none: `TraceSet.baseline_of`)."""
    base = df[df["is_baseline"] & df["timed"] & ~df["stale"]]
    if base.empty:
        return
    best = base.groupby(["definition", "hardware", "workload"])["latency_ms"].min()
    keys = list(zip(df["definition"], df["hardware"], df["workload"]))
    b = pd.Series([best.get(k, math.nan) for k in keys], index=df.index, dtype=float)
    ok = df["timed"]
    df.loc[ok, "speedup_vs_baseline"] = b[ok] / df.loc[ok, "latency_ms"]


def rows_of(df: pd.DataFrame, cols: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    """The frame's rows as dicts of plain Python values (NaN stays NaN), in order.

    Several times faster than DataFrame.to_dict("records") and far faster than iterrows; the
    report's tables are small, so per-row pandas overhead is most of their cost."""
    cols = list(dict.fromkeys(df.columns if cols is None else cols))
    if not cols:
        return [{} for _ in range(len(df))]
    return [dict(zip(cols, r)) for r in zip(*(df[c].tolist() for c in cols))]


def traces_frame(ts: TraceSet) -> pd.DataFrame:
    """One row per result trace; of repeated results for the same (definition, solution,
    workload, hardware) only the newest is kept (an older run is history, not a second sample)."""
    cache: dict = {}
    rows = [_row(ts, t, cache) for t in ts.all_traces() if not t.is_workload]
    _fill_roofline(rows)
    df = pd.DataFrame(rows, columns=COLUMNS)
    if df.empty:
        return df
    df = df.sort_values("timestamp", kind="stable")
    df = df.drop_duplicates(["definition", "solution", "workload", "hardware"], keep="last")
    df = df.sort_values(["definition", "hardware", "batch", "workload_label", "solution"], kind="stable")
    df = df.reset_index(drop=True)
    _fill_baseline(df)
    return df


def older_duplicates(ts: TraceSet) -> int:
    """How many traces traces_frame drops as older repeats of the same result."""
    keys = [
        (t.definition, t.solution, t.workload.uuid, t.evaluation.environment.hardware if t.evaluation else "")
        for t in ts.all_traces()
        if not t.is_workload
    ]
    return len(keys) - len(set(keys))
