"""The summary: traces by status, and per (definition, hardware) a leaderboard and a
solutions x workloads matrix.

Works with any number of solutions and authors. When a definition has one solution by the author
`baseline`, speedups against it are added next to speedups against the definition's reference
(with several, none: a note says which claim it).
Geometric means are taken over the workloads a solution passed with a finite, positive speedup;
`passed`/`workloads` says how many that was, so a solution that fails half its workloads cannot
hide behind a good mean.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple

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
HEADLINE_COLUMNS = [
    "definition", "hardware", "best_solution", "best_author", "best_geomean_speedup", "best_passed",
    "best_workloads", "solutions_correct", "solutions", "workloads_solved", "workloads", "traces", "verdict",
]
# Per definition, the devices with the most traces get a section of their own (tables, plots) in
# the text and HTML reports; the others are one row each in a short table (all of it stays in the
# CSV/JSON). 50,000 traces on 50,000 device names would otherwise be 50,000 sections.
MAX_DEVICES = 8
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
    # per (definition, hardware): the top-line answer (HEADLINE_COLUMNS)
    headlines: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=HEADLINE_COLUMNS))
    # why there is nothing to report, when there is nothing (which files were read, what dropped what)
    empty_reason: str = ""
    _cache: Dict[str, Any] = field(default_factory=dict, repr=False)

    def groups(self) -> List[tuple]:
        """(definition, hardware) pairs that have results, in report order."""
        if self.frame.empty:
            return []
        return list(dict.fromkeys(zip(self.frame["definition"].tolist(), self.frame["hardware"].tolist())))

    def sections(self, limit: int = MAX_DEVICES) -> Tuple[List[tuple], Dict[str, List[str]]]:
        """The (definition, hardware) groups that get a section of their own, in report order,
        and per definition the devices folded into one short table: past `limit` devices of a
        definition, those with the most traces are shown (0 or less: all)."""
        key = ("sections", limit)
        if key not in self._cache:
            self._cache[key] = self._sections(limit)
        return self._cache[key]

    def _sections(self, limit: int) -> Tuple[List[tuple], Dict[str, List[str]]]:
        groups = self.groups()
        if limit <= 0:
            return groups, {}
        by_def: Dict[str, List[str]] = {}
        for d, hw in groups:
            by_def.setdefault(d, []).append(hw)
        if all(len(v) <= limit for v in by_def.values()):
            return groups, {}
        h = self.headlines
        n = dict(zip(zip(h["definition"].tolist(), h["hardware"].tolist()), h["traces"].tolist())) if not h.empty else {}
        shown, folded = set(), {}
        for d, hws in by_def.items():
            if len(hws) <= limit:
                shown.update((d, h) for h in hws)
                continue
            ranked = sorted(hws, key=lambda h: (-n.get((d, h), 0), h))
            shown.update((d, h) for h in ranked[:limit])
            folded[d] = ranked[limit:]
        return [g for g in groups if g in shown], folded

    def headline(self, definition: str, hardware: str) -> Dict[str, Any]:
        """The headline row of one group as a dict ({} when it has none)."""
        if "_by_group" not in self._cache:
            self._cache["_by_group"] = {(r["definition"], r["hardware"]): r for r in rows_of(self.headlines)}
        return self._cache["_by_group"].get((definition, hardware), {})


def status_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Rows total / passed / failed and one per failure status seen; columns all + one per hardware.
    One pass over the rows (a mask per device would be quadratic in the number of devices)."""
    order = [s.value for s in EvaluationStatus]
    if df.empty:
        return pd.DataFrame({"status": ["total", "passed", "failed"], "all": [0, 0, 0]})
    seen = sorted(set(df["status"]) - {"PASSED"}, key=lambda s: (order.index(s) if s in order else 99, s))
    counts: Dict[str, Dict[str, int]] = {}
    for hw, st in zip(df["hardware"].tolist(), df["status"].tolist()):
        c = counts.setdefault(hw, {})
        c[st] = c.get(st, 0) + 1
    hws = sorted(counts)

    def col(c: Dict[str, int]) -> List[int]:
        total, ok = sum(c.values()), c.get("PASSED", 0)
        return [total, ok, total - ok] + [c.get(s, 0) for s in seen]

    allc: Dict[str, int] = {}
    for c in counts.values():
        for k, v in c.items():
            allc[k] = allc.get(k, 0) + v
    # one integer block (a frame built column by column costs ~40 us a column: seconds at 50k devices)
    values = np.array([col(allc)] + [col(counts[hw]) for hw in hws], dtype=np.int64).T
    out = pd.DataFrame(values, columns=["all"] + hws)
    out.insert(0, "status", ["total", "passed", "failed"] + seen)
    return out


def _headlines(df: pd.DataFrame, leaderboard: pd.DataFrame) -> pd.DataFrame:
    """The top-line answer per (definition, hardware): the best correct solution (correct on
    every workload it ran, the highest geometric-mean speedup over the reference), how many
    solutions were correct on every workload, how many workloads have a correct solution."""
    if df.empty:
        return pd.DataFrame(columns=HEADLINE_COLUMNS)
    wl: Dict[tuple, set] = {}
    solved: Dict[tuple, set] = {}
    n: Dict[tuple, int] = {}
    for d, hw, w, timed in zip(df["definition"].tolist(), df["hardware"].tolist(), df["workload"].tolist(), df["timed"].tolist()):
        k = (d, hw)
        wl.setdefault(k, set()).add(w)
        n[k] = n.get(k, 0) + 1
        if timed:
            solved.setdefault(k, set()).add(w)
    by_group: Dict[tuple, List[Dict[str, Any]]] = {}
    for r in rows_of(leaderboard):
        by_group.setdefault((r["definition"], r["hardware"]), []).append(r)
    rows = []
    for k, sols in by_group.items():
        timed = [r for r in sols if r["passed"] > 0 and _number(r["geomean_speedup"])]
        correct = [r for r in timed if r["failed"] == 0]
        if correct:
            best, verdict = max(correct, key=_rank), "correct on every workload it ran"
        elif timed:
            best = max(timed, key=lambda r: (r["passed"],) + _rank(r))
            verdict = "no solution correct on every workload"
        else:
            best, verdict = None, "no correct solution"
        rows.append({
            "definition": k[0], "hardware": k[1],
            "best_solution": best["solution"] if best else "", "best_author": best["author"] if best else "",
            "best_geomean_speedup": best["geomean_speedup"] if best else math.nan,
            "best_passed": best["passed"] if best else 0, "best_workloads": best["workloads"] if best else 0,
            "solutions_correct": sum(1 for r in sols if r["failed"] == 0 and r["passed"] > 0), "solutions": len(sols),
            "workloads_solved": len(solved.get(k, ())), "workloads": len(wl.get(k, ())), "traces": n.get(k, 0),
            "verdict": verdict,
        })
    return pd.DataFrame(rows, columns=HEADLINE_COLUMNS)


def _rank(r: Dict[str, Any]) -> tuple:
    """Best first: highest geometric-mean speedup, then most wins, then most passed."""
    return (float(r["geomean_speedup"]), r["wins"], r["passed"])


def headline_text(h: Dict[str, Any]) -> str:
    """One sentence: who wins, by how much, and how much of it is correct."""
    from .units import fmt_speedup

    if not h:
        return ""
    parts = []
    if h["best_solution"]:
        who = h["best_solution"] + (f" ({h['best_author']})" if h["best_author"] else "")
        over = f"geomean over its {h['best_passed']} passed workload{'s' if h['best_passed'] != 1 else ''}"
        if h["best_passed"] < h["best_workloads"]:
            over += f"; it failed {h['best_workloads'] - h['best_passed']}"
        parts.append(f"best {who}: {fmt_speedup(h['best_geomean_speedup'])} vs reference ({over})")
    else:
        parts.append("no correct solution")
    parts.append(f"{h['solutions_correct']} of {h['solutions']} solutions correct on every workload")
    parts.append(f"{h['workloads_solved']} of {h['workloads']} workloads have a correct solution")
    return "; ".join(parts) + "."


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


def _notes(ts: TraceSet, df: pd.DataFrame, empty_reason: str = "") -> List[str]:
    notes: List[str] = []
    if df.empty:
        notes.append(empty_reason or "No result traces.")
    with_traces = set(df["definition"]) if not df.empty else set()
    for name in sorted(ts.definitions):
        if name not in with_traces:
            n_w = len(ts.workloads_for(name))
            n_s = len(ts.solutions_for(name))
            notes.append(f"Definition {name}: no traces ({n_s} solution(s), {n_w} workload(s) in the dataset).")
    for name in sorted(ts.definitions):
        claims = [s.name for s in ts.baseline_claims(name)]
        if len(claims) > 1:
            notes.append(f"Definition {name}: {len(claims)} solutions claim the author 'baseline' ({', '.join(claims)}); "
                         "a definition has one baseline, so no speedup vs baseline is shown for it.")
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


def summarize(ts: TraceSet, empty_reason: str = "") -> Summary:
    """Build every summary table from a TraceSet (never raises on odd or missing data).
    `empty_reason`: what to say when there are no result traces (load.explain_no_traces); by
    default it is worked out from ts.root."""
    df = traces_frame(ts)
    if df.empty and not empty_reason:
        from .load import explain_no_traces

        empty_reason = explain_no_traces([ts.root] if ts.root is not None else [], ts)
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
    leaderboard = _leaderboard(df, best)
    return Summary(counts=counts, leaderboard=leaderboard, matrix=matrix, best=best,
                   frame=df, notes=_notes(ts, df, empty_reason), totals=totals, about=about,
                   headlines=_headlines(df, leaderboard), empty_reason=empty_reason if df.empty else "")
