"""What the `report` commands and the end of `run` print: each command's tables laid out for people
(at most 100 columns, latency in microseconds) or for scripts (CSV/JSON: every row, raw numbers)."""
from __future__ import annotations

import math
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import pandas as pd

from .frame import rows_of
from .render import Doc, fmt_number, humanize, to_csv, to_json
from .roofline import roofline_table
from .summary import MAX_DEVICES, Summary, headline_text
from .units import fmt_speedup, fmt_us

FOLDED_ROWS = 20  # rows of a folded-devices table before "and N more"
COUNT_DEVICES = 6  # device columns of the status table before "other devices"
UNITS_NOTE = "Latency in microseconds (us); speedup = reference latency / solution latency."


def blank_columns(df: pd.DataFrame, candidates: Iterable[str]) -> list:
    """Those of `candidates` that are empty in every row (NaN or empty string)."""
    return [c for c in candidates if c in df.columns and df[c].replace("", float("nan")).isna().all()]


def _cell(r: Mapping[str, Any]) -> str:
    if r["status"] != "PASSED":
        return r["status"]
    lat = r["latency_ms"]
    if not isinstance(lat, (int, float)) or math.isnan(lat) or lat <= 0:
        return "PASSED, no latency"
    sp = fmt_speedup(r["speedup"])
    return f"{fmt_us(lat)} us" + (f" {sp}" if sp else "")


def matrix_pivot(matrix: pd.DataFrame) -> pd.DataFrame:
    """Workloads as rows (by batch), solutions as columns; a cell is `latency us speedup-vs-ref`
    or the failure status (the baseline speedups are in the solutions table and the CSV)."""
    if matrix.empty:
        return pd.DataFrame()
    m = matrix.assign(cell=[_cell(r) for r in rows_of(matrix, ["status", "latency_ms", "speedup"])])
    order = m.drop_duplicates("workload")[["workload", "workload_label", "batch"]]
    order = order.sort_values(["batch", "workload_label"], kind="stable")
    # two workloads with the same axes (different inputs) keep apart: label + short uuid
    dup = order["workload_label"].duplicated(keep=False)
    labels = {w: (lab + f" [{w[:8]}]" if d else lab) for w, lab, d in zip(order["workload"], order["workload_label"], dup)}
    p = m.pivot(index="workload", columns="solution", values="cell").reindex(order["workload"])
    p = p.fillna("not run")
    p.index = [labels[w] for w in p.index]
    p.index.name = "workload"
    return p.reset_index()


def group_title(definition: str, hardware: str) -> str:
    return f"{definition} on {hardware}"


def _frac(a: Any, b: Any) -> str:
    return f"{int(a)}/{int(b)}"


def headline_table(s: Summary, groups: Optional[Sequence[tuple]] = None, with_device: bool = True) -> pd.DataFrame:
    """The top line of every group as a table for people."""
    keys = groups if groups is not None else s.groups()
    rows = []
    for d, hw in keys:
        h = s.headline(d, hw)
        if not h:
            continue
        row = {"definition": d}
        if with_device:
            row["device"] = hw
        row.update({
            "best solution": h["best_solution"] or "(none correct)",
            "best vs ref": fmt_speedup(h["best_geomean_speedup"]),
            "solutions correct": _frac(h["solutions_correct"], h["solutions"]),
            "workloads solved": _frac(h["workloads_solved"], h["workloads"]),
        })
        rows.append(row)
    return pd.DataFrame(rows)


def leaderboard_view(lb: pd.DataFrame, keep: Sequence[str] = ()) -> pd.DataFrame:
    """The solutions table for people: passed as 3/4, helper and empty columns dropped."""
    if lb.empty:
        return lb
    out = lb.copy()
    out["passed"] = [_frac(p, w) for p, w in zip(out["passed"], out["workloads"])]
    drop = [c for c in ("definition", "hardware") if c not in keep] + ["workloads", "failed"]
    drop += blank_columns(out, ("geomean_speedup_vs_baseline", "median_pct_of_peak_bw"))
    return humanize(out, drop=drop)


def counts_view(counts: pd.DataFrame, limit: int = COUNT_DEVICES) -> pd.DataFrame:
    """The status table with at most `limit` device columns (the busiest), the rest summed."""
    devices = [c for c in counts.columns if c not in ("status", "all")]
    if len(devices) <= limit:
        return counts
    total = dict(zip(counts.columns, counts.iloc[0].tolist()))  # the "total" row
    busiest = sorted(devices, key=lambda c: (-int(total[c]), c))[:limit]
    out = counts[["status", "all"] + sorted(busiest)].copy()
    numbers = counts[["all"] + sorted(busiest)].to_numpy(dtype="int64")
    # every device together is "all": the others are all minus the busiest
    out[f"{len(devices) - limit} other devices"] = numbers[:, 0] - numbers[:, 1:].sum(axis=1)
    return out


def folded_view(s: Summary, definition: str, hardwares: Sequence[str], limit: int = FOLDED_ROWS) -> Tuple[pd.DataFrame, int]:
    """One row per device not given a section of its own (at most `limit`), and how many more."""
    t = headline_table(s, [(definition, hw) for hw in hardwares[:limit]])
    if not t.empty:
        t = t.drop(columns=["definition"])
        t.insert(1, "traces", [int(s.headline(definition, hw).get("traces", 0)) for hw in hardwares[:limit]])
    return t, max(0, len(hardwares) - limit)


def _folded(doc: Doc, s: Summary, folded: Dict[str, List[str]], limit: int) -> None:
    for d, hws in folded.items():
        doc.heading(f"{d}: {len(hws)} more devices", 2)
        doc.para(f"Only the {limit} devices with the most traces of {d} have a section of their own; one line "
                 f"each for the others (every row: --format csv or json; all sections: --max-devices 0).")
        t, more = folded_view(s, d, hws)
        doc.table(t)
        if more:
            doc.para(f"... and {more} more devices.")


def summary_doc(s: Summary, max_devices: int = MAX_DEVICES) -> Doc:
    doc = Doc()
    t = s.totals
    doc.heading("Summary", 1)
    doc.para(f"Traces: {t['traces']} total, {t['passed']} passed, {t['failed']} failed "
             f"({t['definitions']} definitions, {t['solutions']} solutions, {t['hardware']} device(s)). {UNITS_NOTE}")
    if s.empty_reason:
        doc.para(s.empty_reason)
    shown, folded = s.sections(max_devices)
    if shown:
        doc.heading("Top line per definition and device", 2)
        doc.table(headline_table(s, shown))
    doc.table(counts_view(s.counts))
    lb_by = _split(s.leaderboard)
    frame_by = _split(s.frame)
    for d, hw in shown:
        doc.heading(group_title(d, hw), 2)
        doc.para(headline_text(s.headline(d, hw)))
        doc.heading("Solutions", 3)
        doc.table(leaderboard_view(lb_by.get((d, hw), s.leaderboard.iloc[0:0])))
        doc.heading("Per workload: latency (us) and speedup vs reference", 3)
        doc.table(matrix_pivot(frame_by.get((d, hw), s.frame.iloc[0:0])))
    _folded(doc, s, folded, max_devices)
    if s.notes:
        doc.heading("Notes", 2)
        doc.bullets(s.notes)
    return doc


BEST_TEXT_DROP = ["definition", "hardware", "workload", "batch", "candidates", "author", "samples", "max_rel_error", "tie_with",
                  "runner_up_latency_ms"]

BEST_TEXT_ORDER = ["workload_label", "winner", "latency_ms", "spread", "speedup", "speedup_vs_baseline", "verdict",
                   "tie_with", "runner_up", "runner_up_ratio", "max_abs_error", "flags"]


def best_doc(s: Summary, max_devices: int = MAX_DEVICES) -> Doc:
    doc = Doc()
    doc.heading("Best solution per workload", 1)
    doc.para(UNITS_NOTE + " A lead inside the measurement noise is a tie.")
    if s.best.empty:
        doc.para(s.empty_reason or "No result traces: nothing to rank.")
    shown, folded = s.sections(max_devices)
    best_by = _split(s.best)
    for d, hw in shown:
        b = best_by.get((d, hw), s.best.iloc[0:0])
        doc.heading(group_title(d, hw), 2)
        doc.para(headline_text(s.headline(d, hw)))
        drop = BEST_TEXT_DROP + blank_columns(b, ("speedup_vs_baseline", "tie_with", "spread", "flags"))
        order = [c for c in BEST_TEXT_ORDER if c in b.columns] + [c for c in b.columns if c not in BEST_TEXT_ORDER]
        doc.table(humanize(b[order], drop=drop))
    _folded(doc, s, folded, max_devices)
    if s.notes:
        doc.heading("Notes", 2)
        doc.bullets(s.notes)
    return doc


def roofline_doc(s: Summary, max_devices: int = MAX_DEVICES) -> Doc:
    doc = Doc()
    r = roofline_table(s.frame)
    doc.heading("Roofline: achieved throughput and share of peak", 1)
    doc.para("Latency in microseconds (us); bytes and FLOPs per call.")
    if r.empty:
        doc.para(s.empty_reason or "No timed traces.")
    shown, folded = s.sections(max_devices)
    r_by = _split(r)
    for d, hw in shown:
        sub = r_by.get((d, hw))
        if sub is None or sub.empty:
            continue
        doc.heading(group_title(d, hw), 2)
        drop = ["definition", "hardware", "workload", "batch"]
        drop += blank_columns(sub, ("flops", "achieved_tflops", "peak_tflops", "pct_of_peak_flops", "peak_gbps",
                                    "pct_of_peak_bw", "peak_source", "flags"))
        doc.table(humanize(sub, drop=drop))
    _folded(doc, s, folded, max_devices)
    if not r.empty and r["peak_gbps"].isna().any():
        doc.para("Blank peak: the device's peak bandwidth is unknown (not measured, no datasheet entry).")
    return doc


class Split:
    """Rows of a table by (definition, hardware): grouped once (a mask per group is quadratic in
    the number of groups), each group's frame taken when first asked for."""

    def __init__(self, df: pd.DataFrame):
        self.df = df
        self.idx: Dict[tuple, List[int]] = {}
        self._cols: Optional[List[list]] = None
        if not df.empty and "definition" in df.columns:  # plain Python: a groupby on 50,000 keys builds a MultiIndex
            for i, key in enumerate(zip(df["definition"].tolist(), df["hardware"].tolist())):
                self.idx.setdefault(key, []).append(i)

    def get(self, key: tuple, default: Optional[pd.DataFrame] = None) -> pd.DataFrame:
        v = self.idx.get(key)
        if v is None:
            return self.df.iloc[0:0] if default is None else default
        return self.df.take(v)

    def values(self, key: tuple) -> List[Any]:
        """The group's columns and rows as plain values, for a content key: [columns, row lists]
        (each column is turned into a list once, not a frame per group)."""
        if self._cols is None:
            self._cols = [self.df[c].tolist() for c in self.df.columns]
        return [[str(c) for c in self.df.columns], [[col[i] for col in self._cols] for i in self.idx.get(key, ())]]


def _split(df: pd.DataFrame) -> Split:
    return Split(df)


# ---- the end of `run` ------------------------------------------------------------------------
_AMOUNT = re.compile(r"(?<![\w.=+-])\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])")


def reason_kind(reason: str) -> str:
    """A skip reason without its measured amounts ("2097152 elements is above the CPU limit
    cpu.max_elements=524288" -> "N elements is above ...=524288"): the pairs one limit skipped
    group together whatever their sizes; the limit's own value (after `=`) stays."""
    return _AMOUNT.sub("N", reason)

def skipped_lines(skipped: Sequence[Mapping[str, Any]], labels: Optional[Mapping[tuple, str]] = None,
                  limit: int = 12) -> List[str]:
    """Skipped (solution, workload) pairs grouped by reason: how many, which solutions, which
    workloads (by their axes)."""
    labels = labels or {}
    by_reason: Dict[str, Dict[str, Any]] = {}
    for x in skipped:
        reason = str(x.get("reason") or "no reason given")
        g = by_reason.setdefault(reason_kind(reason), {"n": 0, "solutions": {}, "workloads": {}, "reasons": {}})
        g["n"] += 1
        g["reasons"][reason] = None
        g["solutions"][str(x.get("solution") or "")] = None
        w = str(x.get("workload") or "")
        g["workloads"][labels.get((x.get("definition"), w), w)] = None
    out = []
    for kind, g in sorted(by_reason.items(), key=lambda kv: -kv[1]["n"]):
        reason = next(iter(g["reasons"])) if len(g["reasons"]) == 1 else kind
        sols = [x for x in g["solutions"] if x]
        wls = [x for x in g["workloads"] if x and x != "*"]
        text = f"{g['n']} pair(s): {reason}"
        if sols:
            text += f" [solutions: {', '.join(sols[:6])}{', ...' if len(sols) > 6 else ''}]"
        if wls:
            text += f" [workloads: {'; '.join(wls[:3])}{'; ...' if len(wls) > 3 else ''}]"
        out.append(text)
    if len(out) > limit:
        out = out[:limit] + [f"... {len(out) - limit} more reasons"]
    return out


def run_summary_doc(s: Summary, skipped: Sequence[Mapping[str, Any]] = (), problems: Sequence[str] = (),
                    labels: Optional[Mapping[tuple, str]] = None, report: str = "",
                    max_devices: int = MAX_DEVICES) -> Doc:
    """What `flashinfer-bench run` ends with (results/report/summary.txt): per definition and
    device the top line and the solutions, what was skipped and why, dataset problems; short."""
    doc = Doc()
    t = s.totals
    doc.heading("Results", 1)
    doc.para(f"{t['traces']} traces: {t['passed']} passed, {t['failed']} failed; {t['definitions']} definitions, "
             f"{t['solutions']} solutions, {t['hardware']} device(s). {UNITS_NOTE}")
    if s.empty_reason:
        doc.para(s.empty_reason)
    shown, folded = s.sections(max_devices)
    one_device = s.totals["hardware"] <= 1
    if shown:
        title = "Top line per definition" + ("" if one_device else " and device")
        doc.heading(title + (f" (on {shown[0][1]})" if one_device else ""), 2)
        doc.table(headline_table(s, shown, with_device=not one_device))
        lb = s.leaderboard
        keys = set(shown)
        sub = lb[[k in keys for k in zip(lb["definition"], lb["hardware"])]]
        doc.heading("Solutions", 2)
        view = leaderboard_view(sub, keep=("definition",) if one_device else ("definition", "hardware"))
        doc.table(view.drop(columns=[c for c in ("clear wins", "ties", "author", "language") if c in view.columns]))
    if folded:
        n = sum(len(v) for v in folded.values())
        doc.para(f"{n} more (definition, device) pairs are in the report's CSV files (only the {max_devices} devices "
                 f"with the most traces per definition are listed).")
    if skipped:
        doc.heading(f"Skipped ({len(skipped)})", 2)
        doc.bullets(skipped_lines(skipped, labels))
    if problems:
        doc.heading(f"Dataset problems ({len(problems)})", 2)
        shown_p = list(problems[:20]) + ([f"... {len(problems) - 20} more (flashinfer-bench validate --local DATASET)"]
                                         if len(problems) > 20 else [])
        doc.bullets(shown_p)
    if s.notes:
        doc.heading("Notes", 2)
        doc.bullets(s.notes[:10] + ([f"... {len(s.notes) - 10} more in the report"] if len(s.notes) > 10 else []))
    if report:
        doc.para(f"Full report: {report} (per workload: flashinfer-bench report summary --local DATASET).")
    return doc


# ---- machine formats -------------------------------------------------------------------------
def summary_tables(s: Summary) -> Dict[str, pd.DataFrame]:
    return {"headlines": s.headlines, "counts": s.counts, "leaderboard": s.leaderboard, "matrix": s.matrix}


def render_command(s: Summary, command: str, fmt: str, table: str = "", max_devices: int = MAX_DEVICES) -> str:
    """Text for one `report` command in one format; csv prints one table (`table` picks it)."""
    if command == "summary":
        tables = summary_tables(s)
        default = "leaderboard"
        doc = summary_doc
    elif command == "best":
        tables = {"best": s.best, "headlines": s.headlines}
        default = "best"
        doc = best_doc
    elif command == "roofline":
        tables = {"roofline": roofline_table(s.frame)}
        default = "roofline"
        doc = roofline_doc
    else:
        raise ValueError(f"unknown report command {command!r}")
    if fmt in ("text", "markdown"):
        return doc(s, max_devices).render(fmt)
    if fmt == "csv":
        name = table or default
        if name not in tables:
            raise ValueError(f"--table must be one of {sorted(tables)} for {command}")
        return to_csv(tables[name])
    if fmt == "json":
        payload: Dict[str, Any] = {"totals": s.totals, "notes": s.notes, "units": {"latency": "ms (columns *_ms)"}}
        payload.update(tables)
        return to_json(payload)
    raise ValueError(f"unknown format {fmt!r}")


__all__ = ["render_command", "run_summary_doc", "matrix_pivot", "group_title", "blank_columns", "fmt_number",
           "headline_table", "skipped_lines"]
