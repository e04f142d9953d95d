"""The fastest correct solution per (definition, hardware, workload), and how sure we are.

A win is only called a win when it stands outside the measurement noise of the two fastest
correct solutions. They tie when any of these holds:
  * their p10..p90 latency intervals overlap (when both traces carry p10/p90);
  * their median +- IQR intervals overlap (when both carry iqr_ms);
  * the relative difference (runner-up / winner - 1) is below the larger rel_iqr of the two.
Traces without any spread (FlashInfer-Bench 0.1.2) give "no spread recorded": the faster one is
named, but nothing says the difference is real.

A suspect trace (the supervisor's witness disputed its timing, its latency is below the physical
floor, it patched torch or the reference's time, it left work running) never wins: a solution that
forged its numbers would otherwise top the table it forged them for. It stays in the per-trace
tables with its flags. Nor does a stale trace (it measured a version of its solution other than
the one in the dataset: `TraceSet.is_stale`).
"""
from __future__ import annotations

import math
from typing import Any, Dict, List

import pandas as pd

from .frame import rows_of
from .units import fmt_us

BEST_COLUMNS = [
    "definition", "hardware", "workload_label", "batch", "winner", "author", "latency_ms",
    "spread", "samples", "speedup", "speedup_vs_baseline", "max_abs_error", "max_rel_error",
    "runner_up", "runner_up_latency_ms", "runner_up_ratio", "verdict", "tie_with", "flags",
    "candidates", "workload",
]

CLEAR, TIE, NO_SPREAD, ONLY, NONE = (
    "clear win", "tie (within noise)", "no spread recorded", "only correct solution",
    "no correct solution",
)


def _fin(x: float) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x)) and math.isfinite(x)


def _interval(r: pd.Series, lo: str, hi: str):
    a, b = r.get(lo, math.nan), r.get(hi, math.nan)
    return (a, b) if _fin(a) and _fin(b) else None


def within_noise(a: pd.Series, b: pd.Series) -> Any:
    """True/False when the spread of a (faster) and b says so; None when neither has a spread."""
    known = False
    pa, pb = _interval(a, "latency_ms_p10", "latency_ms_p90"), _interval(b, "latency_ms_p10", "latency_ms_p90")
    if pa and pb:
        known = True
        if pa[1] >= pb[0] and pb[1] >= pa[0]:
            return True
    if _fin(a["iqr_ms"]) and _fin(b["iqr_ms"]):
        known = True
        if a["latency_ms"] + a["iqr_ms"] >= b["latency_ms"] - b["iqr_ms"]:
            return True
    rel = [x for x in (a["rel_iqr"], b["rel_iqr"]) if _fin(x)]
    if rel:
        known = True
        if b["latency_ms"] / a["latency_ms"] - 1.0 < max(rel):
            return True
    return False if known else None


def _spread_text(r: pd.Series) -> str:
    """The winner's spread, in microseconds: "p10-p90 4.95-5.05 us", else "IQR 0.31 us", else
    "IQR 3.0%"."""
    p = _interval(r, "latency_ms_p10", "latency_ms_p90")
    if p:
        return f"p10-p90 {fmt_us(p[0])}-{fmt_us(p[1])} us"
    if _fin(r["iqr_ms"]):
        return f"IQR {fmt_us(r['iqr_ms'])} us"
    if _fin(r["rel_iqr"]):
        return f"IQR {100 * r['rel_iqr']:.1f}%"
    return ""


def _flags(r: pd.Series) -> str:
    out = [f for f in str(r.get("flags") or "").split(", ") if f]
    if r.get("noisy") and "noisy" not in out:
        out.append("noisy")
    if r.get("suspect") and "suspect" not in out:
        out.append("suspect")
    if r.get("stale"):
        out.append("stale: measured another version of the solution")
    if _fin(r.get("pct_of_peak_bw", math.nan)) and r["pct_of_peak_bw"] > 100:
        out.append("above peak bandwidth")
    if not r.get("solution_known", True):
        out.append("solution file missing")
    return ", ".join(out)


def best_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (definition, hardware, workload) of the traces frame."""
    rows: List[Dict[str, Any]] = []
    if df.empty:
        return pd.DataFrame(columns=BEST_COLUMNS)
    # plain dicts, grouped in order of first appearance (a pandas groupby costs more than the work)
    groups: Dict[tuple, List[Dict[str, Any]]] = {}
    cols = ["definition", "hardware", "workload", "workload_label", "batch", "solution", "author", "status", "timed",
            "latency_ms", "latency_ms_p10", "latency_ms_p90", "iqr_ms", "rel_iqr", "samples", "speedup",
            "speedup_vs_baseline", "max_abs_error", "max_rel_error", "flags", "noisy", "suspect", "stale",
            "pct_of_peak_bw", "solution_known"]
    for r in rows_of(df, cols):
        groups.setdefault((r["definition"], r["hardware"], r["workload"]), []).append(r)
    template = dict.fromkeys(BEST_COLUMNS, math.nan)
    for (d, hw, wl), g in groups.items():
        first = g[0]
        base = template.copy()
        base.update(definition=d, hardware=hw, workload=wl, workload_label=first["workload_label"],
                    batch=first["batch"], winner="", author="", spread="", runner_up="",
                    tie_with="", flags="", candidates=len(g))
        ok = sorted((r for r in g if r["timed"] and not r["suspect"] and not r["stale"]), key=_latency_key)  # stable, NaN last
        if not ok:
            statuses = ", ".join(f"{r['solution']} {r['status']}"
                                 f"{(' (stale)' if r['stale'] else ' (suspect)') if r['timed'] else ''}" for r in g)
            base.update(verdict=NONE, flags=statuses)
            rows.append(base)
            continue
        w = ok[0]
        base.update(winner=w["solution"], author=w["author"], latency_ms=w["latency_ms"],
                    spread=_spread_text(w), samples=w["samples"], speedup=w["speedup"],
                    speedup_vs_baseline=w["speedup_vs_baseline"], max_abs_error=w["max_abs_error"],
                    max_rel_error=w["max_rel_error"], flags=_flags(w))
        if len(ok) == 1:
            base["verdict"] = ONLY
        else:
            r = ok[1]
            base.update(runner_up=r["solution"], runner_up_latency_ms=r["latency_ms"],
                        runner_up_ratio=r["latency_ms"] / w["latency_ms"])
            noise = within_noise(w, r)
            if noise is None:
                base["verdict"] = NO_SPREAD
            elif noise:
                base.update(verdict=TIE, tie_with=r["solution"])
            else:
                base["verdict"] = CLEAR
        rows.append(base)
    return pd.DataFrame(rows, columns=BEST_COLUMNS)


def _latency_key(r: Dict[str, Any]) -> tuple:
    v = r["latency_ms"]
    return (0, v) if _fin(v) else (1, 0.0)
