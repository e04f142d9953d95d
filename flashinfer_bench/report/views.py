"""What the `report` commands print: each command's tables laid out for people or scripts."""
from __future__ import annotations

import math
from typing import Any, Dict

import pandas as pd

from .render import Doc, fmt_number, humanize, to_csv, to_json
from .roofline import roofline_table
from .summary import Summary


def blank_columns(df: pd.DataFrame, candidates) -> list:
    """Those of `candidates` that are empty in every row (NaN or empty string)."""
    return [c for c in candidates if c in df.columns and df[c].replace("", float("nan")).isna().all()]


def _cell(r: pd.Series, with_baseline: bool) -> str:
    lat = r["latency_ms"]
    if r["status"] != "PASSED":
        return r["status"]
    if isinstance(lat, float) and (math.isnan(lat) or lat <= 0):
        return "PASSED, no latency"
    text = f"{lat:.4g} ms"
    if not math.isnan(r["speedup"]):
        text += f", {fmt_number('speedup', r['speedup'])} ref"
    if with_baseline and not math.isnan(r["speedup_vs_baseline"]):
        text += f", {fmt_number('speedup', r['speedup_vs_baseline'])} base"
    return text


def matrix_pivot(matrix: pd.DataFrame) -> pd.DataFrame:
    """Workloads as rows (by batch), solutions as columns, cells latency + speedups or status."""
    if matrix.empty:
        return pd.DataFrame()
    with_base = matrix["speedup_vs_baseline"].notna().any()
    m = matrix.assign(cell=[_cell(r, with_base) for _, r in matrix.iterrows()])
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


def summary_doc(s: Summary) -> Doc:
    doc = Doc()
    t = s.totals
    doc.heading("Summary", 1)
    doc.para(f"Traces: {t['traces']} total, {t['passed']} passed, {t['failed']} failed "
             f"({t['definitions']} definitions, {t['solutions']} solutions, {t['hardware']} device(s)).")
    doc.table(s.counts)
    for d, hw in s.groups():
        doc.heading(group_title(d, hw), 2)
        lb = s.leaderboard[(s.leaderboard["definition"] == d) & (s.leaderboard["hardware"] == hw)]
        drop = ["definition", "hardware"] + blank_columns(lb, ("geomean_speedup_vs_baseline", "median_pct_of_peak_bw"))
        doc.heading("Solutions", 3)
        doc.table(humanize(lb, drop=drop))
        sub = s.frame[(s.frame["definition"] == d) & (s.frame["hardware"] == hw)]
        doc.heading("Per workload: median latency, speedup vs reference" + (" and vs baseline" if sub["speedup_vs_baseline"].notna().any() else ""), 3)
        doc.table(matrix_pivot(sub))
    if s.notes:
        doc.heading("Notes", 2)
        doc.bullets(s.notes)
    return doc


def best_doc(s: Summary) -> Doc:
    doc = Doc()
    doc.heading("Best solution per workload", 1)
    if s.best.empty:
        doc.para("No result traces: nothing to rank.")
    for d, hw in s.groups():
        b = s.best[(s.best["definition"] == d) & (s.best["hardware"] == hw)]
        doc.heading(group_title(d, hw), 2)
        drop = ["definition", "hardware", "workload", "batch", "candidates"]
        drop += blank_columns(b, ("speedup_vs_baseline", "samples", "tie_with", "spread", "flags"))
        doc.table(humanize(b, drop=drop))
    if s.notes:
        doc.heading("Notes", 2)
        doc.bullets(s.notes)
    return doc


def roofline_doc(s: Summary) -> Doc:
    doc = Doc()
    r = roofline_table(s.frame)
    doc.heading("Roofline: achieved throughput and share of peak", 1)
    if r.empty:
        doc.para("No timed traces.")
    for d, hw in s.groups():
        sub = r[(r["definition"] == d) & (r["hardware"] == hw)]
        if sub.empty:
            continue
        doc.heading(group_title(d, hw), 2)
        drop = ["definition", "hardware", "workload", "batch"]
        drop += blank_columns(sub, ("flops", "achieved_tflops", "peak_tflops", "pct_of_peak_flops", "peak_gbps",
                                    "pct_of_peak_bw", "peak_source", "flags"))
        doc.table(humanize(sub, drop=drop))
    if not r.empty and r["peak_gbps"].isna().any():
        doc.para("Blank peak: the device's peak bandwidth is unknown (not measured, no datasheet entry).")
    return doc


# ---- machine formats -------------------------------------------------------------------------
def summary_tables(s: Summary) -> Dict[str, pd.DataFrame]:
    return {"counts": s.counts, "leaderboard": s.leaderboard, "matrix": s.matrix}


def render_command(s: Summary, command: str, fmt: str, table: str = "") -> str:
    """Text for one `report` command in one format; csv prints one table (`table` picks it)."""
    if command == "summary":
        tables = summary_tables(s)
        default = "leaderboard"
        doc = summary_doc
    elif command == "best":
        tables = {"best": s.best}
        default = "best"
        doc = best_doc
    elif command == "roofline":
        tables = {"roofline": roofline_table(s.frame)}
        default = "roofline"
        doc = roofline_doc
    else:
        raise ValueError(f"unknown report command {command!r}")
    if fmt in ("text", "markdown"):
        return doc(s).render(fmt)
    if fmt == "csv":
        name = table or default
        if name not in tables:
            raise ValueError(f"--table must be one of {sorted(tables)} for {command}")
        return to_csv(tables[name])
    if fmt == "json":
        payload: Dict[str, Any] = {"totals": s.totals, "notes": s.notes}
        payload.update(tables)
        return to_json(payload)
    raise ValueError(f"unknown format {fmt!r}")
