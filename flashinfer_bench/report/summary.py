"""The summary: traces by status, and per (definition, hardware) a leaderboard and a
solutions x workloads matrix.

Works with any number of solutions and authors. When a solution by the author `baseline`
exists, speedups against it are added next to speedups against the definition's reference.
Geometric means are taken over the workloads a solution passed with a finite, positive speedup;
`passed`/`workloads` says how many that was, so a solution that fails half its workloads cannot
hide behind a good mean.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, List

import numpy as np
import pandas as pd

from flashinfer_bench.data import EvaluationStatus, TraceSet

from .best import CLEAR, ONLY, TIE, best_table
from .frame import older_duplicates, rows_of, traces_frame

LEADERBOARD_COLUMNS = [
    "definition", "hardware", "solution", "author", "language", "workloads", "passed", "failed",
    "wins", "clear_wins", "ties", "geomean_speedup", "geomean_speedup_vs_baseline",
    "median_pct_of_peak_bw",
]
MATRIX_COLUMNS = [
    "definition", "hardware", "workload_label", "batch", "solution", "author", "status",
    "latency_ms", "speedup", "speedup_vs_baseline", "workload",
]


def _number(v: Any) -> bool:
    """Not NaN/None (what pd.to_numeric(..., errors="coerce").dropna() keeps)."""
    try:
        return not math.isnan(float(v))
    except (TypeError, ValueError):
        return False


def geomean(values: pd.Series) -> float:
    v = pd.to_numeric(values, errors="coerce")
    v = v[np.isfinite(v) & (v > 0)]
    return float(np.exp(np.log(v).mean())) if len(v) else math.nan


@dataclass
class Summary:
    """Everything `report summary` shows; each table is a plain DataFrame."""

    counts: pd.DataFrame
    leaderboard: pd.DataFrame
    matrix: pd.DataFrame
    best: pd.DataFrame
    frame: pd.DataFrame
    notes: List[str] = field(default_factory=list)
    totals: Dict[str, int] = field(default_factory=dict)
    # definition -> one line about it (op type, axes, description) for section headers
    about: Dict[str, str] = field(default_factory=dict)

    def groups(self) -> List[tuple]:
        """(definition, hardware) pairs that have results, in report order."""
        if self.frame.empty:
            return []
        return list(dict.fromkeys(zip(self.frame["definition"], self.frame["hardware"])))


def status_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Rows total / passed / failed and one per failure status seen; columns all + one per hardware."""
    hws = sorted(df["hardware"].unique()) if not df.empty else []
    order = [s.value for s in EvaluationStatus]
    seen = sorted(set(df["status"]) - {"PASSED"} if not df.empty else set(), key=lambda s: (order.index(s) if s in order else 99, s))

    def col(sub: pd.DataFrame) -> List[int]:
        vals = [len(sub), int((sub["status"] == "PASSED").sum()), int((sub["status"] != "PASSED").sum())]
        return vals + [int((sub["status"] == s).sum()) for s in seen]

    out = pd.DataFrame({"status": ["total", "passed", "failed"] + seen})
    out["all"] = col(df) if not df.empty else [0, 0, 0]
    for hw in hws:
        out[hw] = col(df[df["hardware"] == hw])
    return out


def _geomean(values: List[Any]) -> float:
    """geomean() on plain values: finite positive numbers only."""
    logs = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f) and f > 0:
            logs.append(math.log(f))
    return math.exp(math.fsum(logs) / len(logs)) if logs else math.nan


def _leaderboard(df: pd.DataFrame, best: pd.DataFrame) -> pd.DataFrame:
    rows: List[Dict[str, Any]] = []
    # plain dicts grouped in order of first appearance (pandas groupby + masks cost more than the work)
    groups: Dict[tuple, List[Dict[str, Any]]] = {}
    if not df.empty:
        cols = ["definition", "hardware", "solution", "author", "language", "passed", "timed", "speedup",
                "speedup_vs_baseline", "pct_of_peak_bw"]
        for r in rows_of(df, cols):
            groups.setdefault((r["definition"], r["hardware"], r["solution"]), []).append(r)
    best_by: Dict[tuple, List[Dict[str, Any]]] = {}
    if not best.empty:
        for b in rows_of(best, ["definition", "hardware", "winner", "verdict", "tie_with"]):
            best_by.setdefault((b["definition"], b["hardware"]), []).append(b)
    for (d, hw, sol), g in groups.items():
        b = best_by.get((d, hw), [])
        wins = sum(1 for x in b if x["winner"] == sol)
        clear = sum(1 for x in b if x["winner"] == sol and x["verdict"] in (CLEAR, ONLY))
        ties = sum(1 for x in b if x["verdict"] == TIE and (x["winner"] == sol or x["tie_with"] == sol))
        timed = [r for r in g if r["timed"]]
        pct = [float(r["pct_of_peak_bw"]) for r in timed if _number(r["pct_of_peak_bw"])]
        rows.append({
            "definition": d, "hardware": hw, "solution": sol, "author": g[0]["author"],
            "language": g[0]["language"], "workloads": len(g), "passed": sum(1 for r in g if r["passed"]),
            "failed": sum(1 for r in g if not r["passed"]), "wins": wins, "clear_wins": clear, "ties": ties,
            "geomean_speedup": _geomean([r["speedup"] for r in timed]),
            "geomean_speedup_vs_baseline": _geomean([r["speedup_vs_baseline"] for r in timed]),
            "median_pct_of_peak_bw": float(statistics.median(pct)) if pct else math.nan,
        })
    out = pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)
    if out.empty:
        return out
    out["_rank"] = out["geomean_speedup"].fillna(-1)
    out = out.sort_values(["definition", "hardware", "wins", "_rank"], ascending=[True, True, False, False], kind="stable")
    return out.drop(columns="_rank").reset_index(drop=True)


def _notes(ts: TraceSet, df: pd.DataFrame) -> List[str]:
    notes: List[str] = []
    if df.empty:
        notes.append("No result traces found: nothing has been benchmarked yet (or the path holds no traces/ folder).")
    for name in sorted(ts.definitions):
        if df.empty or name not in set(df["definition"]):
            n_w = len(ts.workloads_for(name))
            n_s = len(ts.solutions_for(name))
            notes.append(f"Definition {name}: no traces ({n_s} solution(s), {n_w} workload(s) in the dataset).")
    if not df.empty:
        for name in sorted(set(df.loc[~df["definition_known"], "definition"])):
            n = int((df["definition"] == name).sum())
            notes.append(f"Definition {name}: not in the dataset any more; its {n} trace(s) are shown without shapes or roofline.")
        for name in sorted(set(df.loc[~df["solution_known"], "solution"])):
            n = int((df["solution"] == name).sum())
            notes.append(f"Solution {name}: not in the dataset any more; its {n} trace(s) are shown without author.")
        for d, g in df.groupby("definition"):
            ran = set(g["solution"])
            for s in ts.solutions_for(d):
                if s.name not in ran:
                    notes.append(f"Solution {s.name} ({d}): no traces.")
        n_nan = int((df["passed"] & ~df["timed"]).sum())
        if n_nan:
            notes.append(f"{n_nan} PASSED traces have no usable latency (NaN, zero or negative); they count as passed but win nothing.")
    dup = older_duplicates(ts)
    if dup:
        notes.append(f"{dup} older traces of the same (definition, solution, workload, hardware) were superseded by newer ones.")
    errors = ts.errors
    if errors:
        notes.append(f"{len(errors)} problems while loading the dataset, for example: {errors[0]}")
    return notes


def summarize(ts: TraceSet) -> Summary:
    """Build every summary table from a TraceSet (never raises on odd or missing data)."""
    df = traces_frame(ts)
    best = best_table(df)
    matrix = df[MATRIX_COLUMNS].copy() if not df.empty else pd.DataFrame(columns=MATRIX_COLUMNS)
    counts = status_counts(df)
    totals = {
        "definitions": len(set(ts.definitions) | (set(df["definition"]) if not df.empty else set())),
        "solutions": len(set(s.name for s in ts.all_solutions()) | (set(df["solution"]) if not df.empty else set())),
        "hardware": int(df["hardware"].nunique()) if not df.empty else 0,
        "traces": len(df),
        "passed": int(df["passed"].sum()) if not df.empty else 0,
        "failed": int((~df["passed"]).sum()) if not df.empty else 0,
    }
    about = {}
    for name, d in ts.definitions.items():
        axes = ", ".join(f"{k}={a.value}" if getattr(a, "value", None) is not None else k for k, a in d.axes.items())
        about[name] = " · ".join(x for x in (d.op_type, f"axes: {axes}", d.description or "") if x)
    return Summary(counts=counts, leaderboard=_leaderboard(df, best), matrix=matrix, best=best,
                   frame=df, notes=_notes(ts, df), totals=totals, about=about)
