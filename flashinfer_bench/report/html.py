"""One self-contained HTML report (plots inlined as base64 SVG images, a few lines of vanilla JS to
sort tables, no network), plus the same plots and tables as separate files for Snakemake's report.
"""
from __future__ import annotations

import base64
import functools
import html
import json
import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Union

import pandas as pd

from flashinfer_bench.data import EvaluationStatus, TraceSet

from .frame import rows_of
from .plots import EXT, MIME, PLOT_KINDS, Drawing, PlotCache, records
from .render import fmt_number, title, to_csv
from .roofline import roofline_table
from .summary import MAX_DEVICES, Summary, headline_text, summarize
from .units import LATENCY_UNIT_HTML, fmt_speedup, fmt_us
from .views import Split, counts_view, group_title, headline_table, leaderboard_view, reason_kind

PathLike = Union[str, Path]
LOG_CAP = 20000
SKIPPED_COLUMNS = ["definition", "solution", "workload", "reason"]
MAX_FAILURES = 300  # failures listed with their logs; the rest are counted (all are in matrix.csv)
MAX_FOLDED = 100  # rows of a folded-devices table in the page (all are in headlines.csv)
PLOT_CACHE = ".plot-cache"  # in the report's folder: the last report's plots and tables by content (PlotCache)
MAX_TABLE_ROWS = 2000  # rows of a standalone table (tables/*.html); the CSV next to it has all
NO_REASON = "no trace: not benchmarked (a pipeline run lists why it skipped a pair in results/plan/notes.json; --skipped FILE)"
NO_REASON_RUN = "no trace: not selected for this run (--definitions/--solutions), or its trace did not load (see the notes)"

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1400px;padding:0 1.2em 3em;color:#1d2530;background:#fff;box-sizing:border-box}
h1{margin:.6em 0 .2em}h2{border-bottom:2px solid #dde3ea;padding-bottom:.2em;margin-top:1.6em;overflow-wrap:anywhere}h3{margin-top:1.2em;color:#2b4a6f;overflow-wrap:anywhere}
nav{background:#f4f6f9;padding:.5em .8em;border-radius:6px;font-size:.92em;overflow-wrap:anywhere}nav a{margin-right:1em}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.84em;max-width:100%}
th,td{border:1px solid #d5dbe2;padding:.25em .5em;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:#eef2f6}table.sortable th{cursor:pointer}table.sortable th[aria-sort=ascending]::after{content:" \\25B2"}table.sortable th[aria-sort=descending]::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.cell{white-space:normal}.ok{color:#17703a}.bad{color:#b42318;font-weight:600}.muted{color:#6b7785}
.plots{display:flex;flex-wrap:wrap;gap:.6em}.plots figure{margin:0;max-width:100%}.plots img{width:600px;max-width:100%;height:auto;border:1px solid #e2e6eb}
.plots figcaption{font-size:.8em;color:#6b7785;max-width:600px}details{margin:.3em 0}summary{cursor:pointer;overflow-wrap:anywhere}pre{background:#f6f8fa;padding:.6em;overflow:auto;max-height:28em;font-size:.82em;white-space:pre-wrap;overflow-wrap:anywhere}
.totals{font-size:1.05em}.headline{font-size:1.02em;background:#f0f7f2;border-left:4px solid #2f9e5b;padding:.35em .7em;margin:.4em 0}
.note{background:#fff8e6;border-left:4px solid #f0b429;padding:.3em .7em;margin:.3em 0;overflow-wrap:anywhere}.scroll{overflow-x:auto;max-width:100%}
"""

# Sorts any table.sortable by the clicked column: numeric by data-sort when the cell has one.
JS = """
(function(){
  function key(td){var v=td.getAttribute('data-sort');if(v!==null&&v!==''&&!isNaN(v))return [0,parseFloat(v)];return [1,td.textContent.trim().toLowerCase()];}
  function cmp(a,b){if(a[0]!==b[0])return a[0]-b[0];return a[1]<b[1]?-1:a[1]>b[1]?1:0;}
  var tables=document.querySelectorAll('table.sortable');
  tables.forEach(function(t){
    var ths=t.tHead?t.tHead.rows[0].cells:[];
    Array.prototype.forEach.call(ths,function(th,i){th.addEventListener('click',function(){
      var asc=th.getAttribute('aria-sort')!=='ascending';
      Array.prototype.forEach.call(ths,function(h){h.removeAttribute('aria-sort');});
      th.setAttribute('aria-sort',asc?'ascending':'descending');
      var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
      rows.sort(function(r1,r2){var c=cmp(key(r1.cells[i]),key(r2.cells[i]));return asc?c:-c;});
      rows.forEach(function(r){body.appendChild(r);});
    });});
  });
  document.body.setAttribute('data-sortable-tables',String(tables.length));
})();
"""


GOOD = {"PASSED", "passed"}
BAD = {s.value for s in EvaluationStatus if s.value != "PASSED"} | {"failed", "UNKNOWN"}


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _w(x: Any) -> str:
    """_e for a table cell: a line may break after `_`, `,` and `/` (kernel names, lists of axes,
    paths), so a column narrows at those points instead of anywhere in a word."""
    return _e(x).replace("_", "_<wbr>").replace(",", ",<wbr>").replace("/", "/<wbr>")


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def _rows(df: pd.DataFrame, cols: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    """Rows as plain dicts of Python values (iterrows builds a Series per row: slow)."""
    return rows_of(df, cols)


def _title(col: str) -> str:
    return title(col).replace("(us)", f"({LATENCY_UNIT_HTML})")


def html_table(df: pd.DataFrame, columns: Optional[Sequence[str]] = None, sortable: bool = True, cls: str = "",
               max_rows: Optional[int] = None, full: str = "") -> str:
    """A table of raw values: formatted for people (latency in µs), raw numbers kept in data-sort.
    Past `max_rows` rows the rest is counted, and `full` names where all of them are."""
    if df.empty:
        return '<p class="muted">(none)</p>'
    cols = list(columns or df.columns)
    head = "".join(f"<th>{_w(_title(c))}</th>" for c in cols)
    body = []
    more = 0
    if max_rows is not None and len(df) > max_rows:
        more = len(df) - max_rows
        df = df.iloc[:max_rows]
    for r in _rows(df, cols):
        cells = []
        for c in cols:
            v = r[c]
            text = fmt_number(c, v)
            attrs = ""
            if _is_num(v):
                attrs = f' class="num" data-sort="{float(v)!r}"'
            elif c == "status" and v in GOOD:
                attrs = ' class="ok"'
            elif c == "status" and v in BAD:
                attrs = ' class="bad"'
            elif c == "verdict" and isinstance(v, str) and v.startswith("tie"):
                attrs = ' class="bad"'
            cells.append(f"<td{attrs}>{_e(text) if _is_num(v) else _w(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    klass = " ".join(x for x in ("sortable" if sortable else "", cls) if x)
    tail = f'<p class="muted">... and {more} more rows{f" (all of them: {_e(full)})" if full else ""}.</p>' if more else ""
    return (f'<div class="scroll"><table class="{klass}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>{tail}")


def _matrix_html(sub: pd.DataFrame) -> str:
    """Workloads x solutions; a cell shows latency and speedups, or the failure status."""
    if sub.empty:
        return '<p class="muted">(none)</p>'
    sols = sorted(sub["solution"].unique())
    with_base = sub["speedup_vs_baseline"].notna().any()
    order = sub.drop_duplicates("workload").sort_values(["batch", "workload_label"], kind="stable")
    cols = ["workload", "solution", "timed", "passed", "status", "latency_ms", "speedup", "speedup_vs_baseline"]
    by_pair = {(r["workload"], r["solution"]): r for r in _rows(sub, cols)}
    head = "<th>workload</th>" + "".join(f"<th>{_w(s)}</th>" for s in sols)
    rows = []
    for w in _rows(order, ["workload", "workload_label", "batch"]):
        batch = w["batch"]
        cells = [f'<td data-sort="{float(batch)!r}">{_w(w["workload_label"])}</td>' if _is_num(batch) else f"<td>{_w(w['workload_label'])}</td>"]
        for s in sols:
            r = by_pair.get((w["workload"], s))
            if r is None:
                cells.append('<td class="muted" data-sort="">not run</td>')
                continue
            if r["timed"]:
                text = f"{fmt_us(r['latency_ms'])} {LATENCY_UNIT_HTML}"
                if _is_num(r["speedup"]):
                    text += f" · {fmt_speedup(r['speedup'])} ref"
                if with_base and _is_num(r["speedup_vs_baseline"]):
                    text += f" · {fmt_speedup(r['speedup_vs_baseline'])} base"
                cells.append(f'<td class="num cell" data-sort="{float(r["latency_ms"])!r}">{_e(text)}</td>')
            elif r["passed"]:
                cells.append('<td class="bad">PASSED, no latency</td>')
            else:
                cells.append(f'<td class="bad">{_w(r["status"])}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table class="sortable"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _img(image: bytes, alt: str) -> str:
    return f'<img alt="{_e(alt)}" src="data:{MIME};base64,{base64.b64encode(image).decode()}">'


def _environment_html(frame: pd.DataFrame, devices: Optional[Sequence[str]] = None) -> str:
    """What each device's traces recorded about their environment; `devices`: only these (the
    devices that have a section), the others counted."""
    if frame.empty:
        return '<p class="muted">(no traces)</p>'
    parts = []
    by_hw = frame.groupby("hardware", sort=True).indices
    names = list(by_hw) if devices is None else [h for h in sorted(set(devices)) if h in by_hw]
    for hw in names:
        values: Dict[str, Dict[str, int]] = {}
        envs = frame["environment"].take(by_hw[hw]).tolist()
        for env in envs:
            flat: Dict[str, Any] = {}
            for k, v in (env or {}).items():
                if k == "libs" and isinstance(v, Mapping):
                    flat.update({f"libs.{lk}": lv for lk, lv in v.items()})
                else:
                    flat[k] = v
            for k, v in flat.items():
                if v is None or v == "" or v == {}:
                    continue
                text = json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else str(v)
                values.setdefault(k, {}).setdefault(text, 0)
                values[k][text] += 1
        rows = "".join(
            f"<tr><th>{_e(k)}</th><td>{'<br>'.join(_e(v) + (f' <span class=muted>({n} traces)</span>' if len(vs) > 1 else '') for v, n in sorted(vs.items()))}</td></tr>"
            for k, vs in sorted(values.items()) if k not in ("start_time", "end_time", "worker_pid")
        )
        parts.append(f"<h3>{_e(hw)}</h3><p class=muted>{len(envs)} traces</p><table><tbody>{rows}</tbody></table>")
    rest = len(by_hw) - len(names)
    if rest:
        parts.append(f'<p class="muted">{rest} more devices without a section of their own are not listed here.</p>')
    return "".join(parts)


def _failures_html(frame: pd.DataFrame, limit: int = MAX_FAILURES) -> str:
    fails = frame[~frame["timed"]] if not frame.empty else frame
    if fails.empty:
        return '<p class="ok">No failed traces.</p>'
    counts = fails["status"].value_counts()
    out = ['<p>' + ", ".join(f"<span class=bad>{_e(k)}</span> {int(v)}" for k, v in counts.items()) + "</p>"]
    for r in _rows(fails.iloc[:limit], ["definition", "solution", "workload_label", "hardware", "status", "passed", "log"]):
        log = str(r["log"] or "")
        if len(log) > LOG_CAP:
            log = log[:LOG_CAP] + f"\n... ({len(log) - LOG_CAP} more characters cut)"
        status = r["status"] if not r["passed"] else "PASSED, no latency"
        head = f"{r['definition']} / {r['solution']} / {r['workload_label']} on {r['hardware']}: "
        out.append(f"<details><summary>{_e(head)}<span class=bad>{_e(status)}</span></summary>"
                   f"<pre>{_e(log) if log.strip() else '(no log recorded)'}</pre></details>")
    if len(fails) > limit:
        out.append(f'<p class="muted">... and {len(fails) - limit} more failures (every status: matrix.csv).</p>')
    return "".join(out)


def skipped_groups(skipped: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Skipped pairs grouped by (definition, solution, reason): how many workloads, and which."""
    groups: Dict[tuple, List[str]] = {}
    extra: Dict[tuple, Dict[str, Any]] = {}
    for x in skipped:
        key = (str(x.get("definition") or ""), str(x.get("solution") or ""), str(x.get("reason") or "no reason given"))
        groups.setdefault(key, []).append(str(x.get("workload_label") or x.get("workload") or ""))
        for k, v in x.items():
            if k not in SKIPPED_COLUMNS and k != "workload_label":
                extra.setdefault(key, {})[k] = v
    rows = []
    for (d, sol, reason), wls in groups.items():
        wls = [w for w in dict.fromkeys(wls) if w]
        text = "; ".join(wls[:4]) + (f"; ... ({len(wls) - 4} more)" if len(wls) > 4 else "")
        rows.append({"definition": d, "solution": sol, "workloads": len(wls) or 1, "reason": reason,
                     "which": text, **extra.get((d, sol, reason), {})})
    cols = ["definition", "solution", "workloads", "reason", "which"]
    df = pd.DataFrame(rows)
    return df.reindex(columns=cols + [c for c in df.columns if c not in cols]).fillna("")


def _skipped_html(skipped: Sequence[Mapping[str, Any]]) -> str:
    if not skipped:
        return '<p class="muted">Nothing was skipped: every (solution, workload) pair of the dataset has a trace.</p>'
    head = "".join(f"<li>{n} pair(s): {_e(r)}</li>" for r, n in _reasons(skipped))
    return f"<p>{len(skipped)} (solution, workload) pairs have no trace:</p><ul>{head}</ul>" + html_table(skipped_groups(skipped))


def _group_assets(s: Summary, groups: Optional[Sequence[tuple]] = None,
                  cache: Optional[PlotCache] = None) -> "GroupPlots":
    """The plots of every (definition, hardware) group in `groups` (default: all), being drawn
    (see GroupPlots): the frame is split once, in plain rows; `cache` keeps plots whose rows did
    not change since the last report."""
    groups = [] if s.frame.empty else list(s.groups() if groups is None else groups)
    split = Split(s.frame)
    return GroupPlots(groups, Drawing([(records(split.get(g)), group_title(*g)) for g in groups], cache))


class GroupPlots(Mapping):
    """(definition, hardware) -> plots by kind, from a Drawing: reading it waits for the drawing
    (the page is rendered with its plots last, so its tables are made while the plots are drawn).
    `why`: why no plot can be drawn, when none can."""

    def __init__(self, groups: Sequence[tuple], drawing: Drawing):
        self.groups = list(groups)
        self.drawing = drawing
        self.why = drawing.why
        self._plots: Optional[Dict[tuple, Dict[str, Optional[bytes]]]] = None

    def _all(self) -> Dict[tuple, Dict[str, Optional[bytes]]]:
        if self._plots is None:
            drawn = self.drawing.result()
            self._plots = {} if self.why else dict(zip(self.groups, drawn))
        return self._plots

    def __getitem__(self, key: tuple) -> Dict[str, Optional[bytes]]:
        return self._all()[key]

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


PLOT_CAPTIONS = {
    "latency": f"Median latency ({LATENCY_UNIT_HTML}) vs batch, log-log (bars: p10-p90 where recorded; dashed: reference).",
    "speedup": "Speedup over the definition's reference vs batch (dashed: 1x).",
    "peak_bw": "Achieved DRAM bandwidth as a share of the device's peak (dotted: 100%).",
}


def _headline_html(s: Summary, groups: Sequence[tuple]) -> str:
    t = headline_table(s, groups)
    if t.empty:
        return '<p class="muted">(no results)</p>'
    links = {(d, hw): f"#g-{slug(d)}--{slug(hw)}" for d, hw in groups}
    rows = []
    for (d, hw), r in zip(groups, rows_of(t)):
        cells = [f'<td><a href="{links[(d, hw)]}">{_w(d)}</a></td>', f"<td>{_w(hw)}</td>"]
        best = r["best solution"]
        cells.append(f'<td class="{"bad" if best.startswith("(") else ""}">{_w(best)}</td>')
        sp = s.headline(d, hw).get("best_geomean_speedup")
        cells.append(f'<td class="num" data-sort="{float(sp)!r}">{_e(r["best vs ref"])}</td>' if _is_num(sp) else "<td></td>")
        for c in ("solutions correct", "workloads solved"):
            a, b = r[c].split("/")
            klass = "num ok" if a == b else "num bad"
            cells.append(f'<td class="{klass}" data-sort="{int(a) / max(int(b), 1)!r}">{_e(r[c])}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    head = "".join(f"<th>{_e(c)}</th>" for c in ("definition", "device", "best solution", "best vs ref (geomean)",
                                                 "solutions correct on every workload", "workloads with a correct solution"))
    return (f'<div class="scroll"><table class="sortable"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _folded_html(s: Summary, d: str, hws: Sequence[str], limit: int) -> str:
    t = headline_table(s, [(d, hw) for hw in hws[:MAX_FOLDED]])
    if t.empty:
        return ""
    t = t.drop(columns=["definition"])
    t.insert(1, "traces", [int(s.headline(d, hw).get("traces", 0)) for hw in hws[:MAX_FOLDED]])
    more = len(hws) - MAX_FOLDED
    return (f"<h3>{len(hws)} more devices</h3><p class=muted>Only the {limit} devices with the most traces of this "
            f"definition have a section of their own; one row each for the others"
            f"{f' (the first {MAX_FOLDED} here; all in headlines.csv)' if more > 0 else ''}.</p>" + html_table(t))


def _figures_html(plots: Mapping[tuple, Mapping[str, Optional[bytes]]], d: str, hw: str, n_timed: int,
                  no_plots: str) -> str:
    """The plots of one group, each with its caption, or why it has none."""
    kinds = plots.get((d, hw), {})
    figs = []
    for kind in PLOT_KINDS:
        image = kinds.get(kind)
        if image is None:
            why = no_plots or ("no correct timed results to plot" if n_timed == 0
                               else "one timed result: nothing a plot would add to its table row" if n_timed == 1
                               else "no share of peak: the device's peak bandwidth is unknown" if kind == "peak_bw"
                               else "no correct timed results to plot")
            figs.append(f"<figure><figcaption>{_e(kind)}: {_e(why)}.</figcaption></figure>")
        else:
            figs.append(f"<figure>{_img(image, f'{d} on {hw}: {kind}')}<figcaption>{_e(PLOT_CAPTIONS[kind])}</figcaption></figure>")
    return f'<div class="plots">{"".join(figs)}</div>'


def _group_tables_html(lb_by: Split, frame_by: Split, best_by: Split, roof_by: Split, g: tuple) -> str:
    """The tables of one (definition, hardware) group: solutions, the workload matrix, best per
    workload, roofline."""
    lb = lb_by.get(g)
    out = ["<h4>Solutions</h4>" + _people_table(leaderboard_view(lb), lb)]
    out.append(f"<h4>Latency ({LATENCY_UNIT_HTML}) and speedup per workload</h4>" + _matrix_html(frame_by.get(g)))
    b = best_by.get(g)
    bcols = [c for c in b.columns if c not in ("definition", "hardware", "workload", "batch", "max_rel_error",
                                                  "runner_up_latency_ms", "candidates")
             and not (c in ("speedup_vs_baseline", "samples", "tie_with", "flags") and b[c].replace("", math.nan).isna().all())]
    out.append("<h4>Best per workload</h4>" + html_table(b, bcols))
    r = roof_by.get(g)
    rcols = [c for c in r.columns if c not in ("definition", "hardware", "workload", "batch")
             and not (c in ("flops", "achieved_tflops", "peak_tflops", "pct_of_peak_flops", "flags")
                      and r[c].replace("", math.nan).isna().all())]
    out.append("<h4>Roofline</h4>" + html_table(r, rcols))
    return "".join(out)


def render_html(s: Summary, plots: Mapping[tuple, Mapping[str, Optional[bytes]]], skipped: Sequence[Mapping[str, Any]] = (),
                title: str = "FlashInfer-Bench report", sources: Sequence[str] = (),
                roof: Optional[pd.DataFrame] = None, max_devices: int = MAX_DEVICES, no_plots: str = "",
                cache: Optional[PlotCache] = None) -> str:
    """The whole report as one HTML string (`roof`: roofline_table(s.frame), when already made;
    `no_plots`: why no plot could be drawn, when none could; `cache`: the last report's, whose
    groups' tables are re-used where their rows did not change). The plots go in last (see
    GroupPlots)."""
    t = s.totals
    shown, folded = s.sections(max_devices)
    defs = list(dict.fromkeys([d for d, _ in shown] + sorted(s.frame["definition"].unique() if not s.frame.empty else [])))
    nav = "".join(f'<a href="#def-{slug(d)}">{_e(d)}</a>' for d in defs)
    body: List[Union[str, Callable[[], str]]] = [f"<h1>{_e(title)}</h1>"]
    if sources:
        body.append(f"<p class=muted>Dataset: {_e(', '.join(sources))}</p>")
    body.append(f'<nav><a href="#summary">Summary</a>{nav}<a href="#failures">Failures</a>'
                f'<a href="#skipped">Skipped</a><a href="#environment">Environment</a><a href="#notes">Notes</a></nav>')
    body.append('<section id="summary"><h2>Summary</h2>')
    body.append(f"<p class=totals>Traces: <b>{t['traces']}</b> total, <b class=ok>{t['passed']}</b> passed, "
                f"<b class={'bad' if t['failed'] else 'ok'}>{t['failed']}</b> failed; {t['definitions']} definitions, "
                f"{t['solutions']} solutions, {t['hardware']} device{'' if t['hardware'] == 1 else 's'}. Latency in microseconds ({LATENCY_UNIT_HTML}); "
                f"speedup = reference latency / solution latency. Each device is reported on its own: results "
                f"of different devices are never averaged together.</p>")
    if s.empty_reason:
        body.append(f'<div class="note">{_e(s.empty_reason)}</div>')
    if skipped:
        body.append(f'<p><a href="#skipped">{len(skipped)} (solution, workload) pairs skipped</a>: '
                    + _e("; ".join(f"{r} ({n})" for r, n in _reasons(skipped)[:3])) + "</p>")
    body.append("<h3>Who wins where: the top line per definition and device</h3>")
    body.append("<p class=muted>Best: the solution correct on every workload it ran with the highest geometric-mean "
                "speedup over the reference.</p>")
    body.append(_headline_html(s, shown))
    body.append(html_table(counts_view(s.counts), sortable=False))
    if s.notes:
        body.append("".join(f'<div class="note">{_e(n)}</div>' for n in s.notes[:5]))
    body.append("</section>")
    if roof is None:
        roof = roofline_table(s.frame)
    lb_by, frame_by, best_by, roof_by = Split(s.leaderboard), Split(s.frame), Split(s.best), Split(roof)
    timed = s.frame["timed"].tolist() if not s.frame.empty else []
    by_def: Dict[str, List[str]] = {}
    for d, hw in shown:
        by_def.setdefault(d, []).append(hw)
    for d in defs:
        body.append(f'<section id="def-{slug(d)}"><h2>{_e(d)}</h2>')
        about = s.about.get(d, "not in the dataset any more: shown without shapes or roofline")
        body.append(f"<p class=muted>{_e(about)}</p>")
        for hw in by_def.get(d, []):
            g = (d, hw)
            body.append(f'<h3 id="g-{slug(d)}--{slug(hw)}">on {_e(hw)}</h3>')
            body.append(f'<p class="headline">{_e(headline_text(s.headline(d, hw)))}</p>')
            n_timed = sum(1 for i in frame_by.idx.get(g, ()) if timed[i])
            body.append(functools.partial(_figures_html, plots, d, hw, n_timed, no_plots))  # last: see GroupPlots
            make = functools.partial(_group_tables_html, lb_by, frame_by, best_by, roof_by, g)
            if cache is None:
                body.append(make())
            else:  # the same rows as in the last report: the same tables
                body.append(cache.text(["tables", g, *(sp.values(g) for sp in (lb_by, frame_by, best_by, roof_by))], make))
        if d in folded:
            body.append(_folded_html(s, d, folded[d], max_devices))
        body.append("</section>")
    body.append(f'<section id="failures"><h2>Failures</h2>{_failures_html(s.frame)}</section>')
    body.append(f'<section id="skipped"><h2>Skipped workloads</h2>{_skipped_html(skipped)}</section>')
    body.append(f'<section id="environment"><h2>Environment per device</h2>'
                f'{_environment_html(s.frame, [hw for _, hw in shown] if folded else None)}</section>')
    notes = "".join(f"<li>{_e(n)}</li>" for n in s.notes) or "<li>None.</li>"
    body.append(f'<section id="notes"><h2>Notes</h2><ul>{notes}</ul></section>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body>{''.join(p if isinstance(p, str) else p() for p in body)}"
            f"<script>{JS}</script></body></html>\n")


def _people_table(view: pd.DataFrame, raw: pd.DataFrame) -> str:
    """A table already formatted for people (views.leaderboard_view), sortable by the raw numbers
    of `raw` where a column has them."""
    if view.empty:
        return '<p class="muted">(none)</p>'
    raw_by_title = {title(c): c for c in raw.columns}
    head = "".join(f"<th>{_w(c.replace('(us)', f'({LATENCY_UNIT_HTML})'))}</th>" for c in view.columns)
    body = []
    raw_rows = rows_of(raw)
    for i, r in enumerate(rows_of(view)):
        cells = []
        for c in view.columns:
            src = raw_by_title.get(c)
            v = raw_rows[i].get(src) if src else None
            if c == "passed":
                p, w = raw_rows[i]["passed"], raw_rows[i]["workloads"]
                cells.append(f'<td class="num {"ok" if p == w else "bad"}" data-sort="{p / max(w, 1)!r}">{_e(r[c])}</td>')
            elif _is_num(v):
                cells.append(f'<td class="num" data-sort="{float(v)!r}">{_e(r[c])}</td>')
            else:
                cells.append(f"<td>{_w(r[c])}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table class="sortable"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _reasons(skipped: Sequence[Mapping[str, Any]]) -> List[tuple]:
    """(reason, pairs) by kind of reason (views.reason_kind: one CPU limit whatever the sizes),
    most pairs first; a kind with one wording keeps it."""
    by: Dict[str, List[Any]] = {}
    for x in skipped:
        r = str(x.get("reason") or "no reason given")
        g = by.setdefault(reason_kind(r), [0, {}])
        g[0] += 1
        g[1][r] = None
    out = [(next(iter(g[1])) if len(g[1]) == 1 else kind, g[0]) for kind, g in by.items()]
    return sorted(out, key=lambda kv: -kv[1])


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _readable(path: Path) -> Path:
    """Reports are for reading (and serving): the usual 0644, not the temp file's 0600."""
    os.chmod(path, 0o666 & ~_umask())
    return path


def _write_text(path: Path, text: str) -> Path:
    return _write_bytes(Path(path), text.encode("utf-8"))


def _write_bytes(path: Path, data: bytes) -> Path:
    """Temp file + rename, so a reader sees the old file or the new one, never a torn one. No fsync
    (unlike data.io.atomic_write_text): a report is rebuilt from the traces, and a dozen fsyncs
    cost more wall time than drawing it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return _readable(path)


def _standalone(title: str, table: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
            f"<style>{CSS}</style></head><body><h2>{_e(title)}</h2>{table}<script>{JS}</script></body></html>\n")


def _why_empty(ts: TraceSet, sources: Sequence[str]) -> str:
    """explain_no_traces for the paths read, when the TraceSet holds no result trace."""
    if any(not t.is_workload for t in ts.all_traces()):
        return ""
    from .load import explain_no_traces

    return explain_no_traces(sources, ts)


def _as_trace_set(trace_set: Union[TraceSet, PathLike, Sequence[PathLike]]) -> tuple:
    from .load import load_paths

    if isinstance(trace_set, TraceSet):
        return trace_set, [str(trace_set.root)] if trace_set.root else []
    paths = [trace_set] if isinstance(trace_set, (str, Path)) else list(trace_set)
    return load_paths(paths), [str(p) for p in paths]


def write_snakemake_report_assets(summary: Summary, plots: Mapping[tuple, Mapping[str, Optional[bytes]]], out_dir: PathLike,
                                  roof: Optional[pd.DataFrame] = None) -> Dict[str, List[Path]]:
    """Plots as SVG files and tables as small HTML pages and CSVs, for `report()` in a rule.

    Layout (fixed names, so a rule can declare them): plots/<definition>__<hardware>__<kind>.svg,
    tables/{leaderboard,best,roofline}.html (the first MAX_TABLE_ROWS rows),
    {headlines,leaderboard,matrix,best,roofline,counts}.csv (every row).
    """
    written = _write_table_assets(summary, out_dir, roof)
    written["plots"] = _write_plot_assets(plots, out_dir)
    return written


def _write_plot_assets(plots: Mapping[tuple, Mapping[str, Optional[bytes]]], out_dir: PathLike) -> List[Path]:
    """plots/<definition>__<hardware>__<kind>.svg; our files of groups no longer plotted removed."""
    plot_dir = Path(out_dir) / "plots"
    plot_dir.mkdir(parents=True, exist_ok=True)  # exists even with nothing to plot: a rule's directory() output
    written: List[Path] = []
    keep = set()
    for (d, hw), kinds in plots.items():
        for kind, image in kinds.items():
            if image is None:
                continue
            p = plot_dir / f"{slug(d)}__{slug(hw)}__{kind}.{EXT}"
            _write_bytes(p, image)
            keep.add(p.name)
            written.append(p)
    if plot_dir.is_dir():  # drop plots of groups that no longer exist, and our old PNGs (only our own file names)
        for old in plot_dir.glob("*__*__*.*"):
            stem, _, ext = old.name.rpartition(".")
            if old.name not in keep and ext in (EXT, "png") and stem.rsplit("__", 1)[-1] in PLOT_KINDS:
                old.unlink()
    return written


def _write_table_assets(summary: Summary, out_dir: PathLike, roof: Optional[pd.DataFrame] = None) -> Dict[str, List[Path]]:
    """tables/*.html and the CSVs (see write_snakemake_report_assets)."""
    out = Path(out_dir)
    written: Dict[str, List[Path]] = {"plots": [], "tables": [], "csv": []}
    if roof is None:
        roof = roofline_table(summary.frame)
    tables = {"leaderboard": summary.leaderboard, "best": summary.best, "roofline": roof}
    for name, df in tables.items():
        p = out / "tables" / f"{name}.html"
        _write_text(p, _standalone(f"FlashInfer-Bench {name}", html_table(df, max_rows=MAX_TABLE_ROWS, full=f"{name}.csv")))
        written["tables"].append(p)
    for name, df in {"headlines": summary.headlines, **tables, "matrix": summary.matrix, "counts": summary.counts}.items():
        p = out / f"{name}.csv"
        _write_text(p, to_csv(df))
        written["csv"].append(p)
    return written


def workload_labels(ts: TraceSet) -> Dict[tuple, str]:
    """(definition, workload uuid) -> the workload's axes as a person reads them."""
    from .units import workload_label

    out: Dict[tuple, str] = {}
    for d, ws in ts.workloads.items():
        for w in ws:
            out[(d, w.workload.uuid)] = workload_label(dict(w.workload.axes), w.workload.uuid)
    return out


def not_run(ts: TraceSet, frame: pd.DataFrame, skipped: Sequence[Mapping[str, Any]] = (),
            labels: Optional[Mapping[tuple, str]] = None, no_reason: str = NO_REASON) -> List[Dict[str, Any]]:
    """What was not benchmarked, and why: every entry of `skipped` (the pipeline's plan: CPU size
    limits, CUDA on a CPU, a failed build), then every other (solution, workload) pair of the
    dataset that has no trace on any device, as NO_REASON. Each gets `workload_label` (its axes)."""
    labels = labels if labels is not None else workload_labels(ts)
    ran = set(zip(frame["solution"], frame["workload"])) if not frame.empty else set()
    out: List[Dict[str, Any]] = []
    covered = set()
    for x in skipped:
        x = dict(x)
        covered.add((str(x.get("solution") or ""), str(x.get("workload") or "")))
        if not x.get("definition"):  # a failed build names its solution only
            sol = ts.get_solution(str(x.get("solution") or ""))
            x["definition"] = sol.definition if sol is not None else ""
        w = str(x.get("workload") or "")
        x.setdefault("workload_label", labels.get((x.get("definition"), w), w))
        out.append(x)
    for d in sorted(ts.definitions):
        wls = ts.workloads_for(d)
        for sol in ts.solutions_for(d):
            for w in wls:
                key = (sol.name, w.workload.uuid)
                if key in ran or key in covered or (sol.name, "*") in covered:
                    continue
                out.append({"definition": d, "solution": sol.name, "workload": w.workload.uuid, "reason": no_reason,
                            "workload_label": labels.get((d, w.workload.uuid), w.workload.uuid)})
    return out


@dataclass
class ReportResult:
    """What build_report wrote and left out, for the caller to tell the user."""

    index: Path
    summary: Summary
    skipped: List[Dict[str, Any]]
    folded: Dict[str, List[str]]
    max_devices: int = MAX_DEVICES
    skipped_source: str = ""  # where the skip reasons came from (a file), "" when none was given
    no_plots: str = ""  # why no plot was drawn, when none could be

    def lines(self) -> List[str]:
        """A few lines for a terminal: what was written, skipped and left out, and why."""
        t = self.summary.totals
        out = [f"Wrote {self.index}: {t['traces']} traces, {t['definitions']} definitions, {t['hardware']} device(s)."]
        if self.summary.empty_reason:
            out.append(self.summary.empty_reason)
        if self.skipped:
            src = f"reasons from {self.skipped_source}" if self.skipped_source else \
                "no skip reasons given: --skipped FILE, or the pipeline's RESULTS/plan/notes.json"
            out.append(f"Skipped: {len(self.skipped)} (solution, workload) pairs without a trace ({src}):")
            out += [f"  {n} pair(s): {r}" for r, n in _reasons(self.skipped)[:8]]
        else:
            out.append("Skipped: nothing; every (solution, workload) pair of the dataset has a trace.")
        if self.no_plots:
            out.append(f"No plots: {self.no_plots}.")
        if self.folded:
            n = sum(len(v) for v in self.folded.values())
            out.append(f"Folded: {n} (definition, device) groups past the {self.max_devices} busiest devices per definition "
                       f"are one row each, without plots (all rows: headlines.csv; --max-devices 0 shows all).")
        return out


def build_report(trace_set: Union[TraceSet, PathLike, Sequence[PathLike]], out_dir: PathLike,
                 skipped: Optional[Iterable[Mapping[str, Any]]] = None, title: str = "FlashInfer-Bench report",
                 assets: bool = True, summary: Optional[Summary] = None, max_devices: int = MAX_DEVICES,
                 sources: Optional[Sequence[str]] = None, skipped_source: str = "", no_reason: str = NO_REASON) -> ReportResult:
    """write_report, returning what it wrote and what it skipped or folded (see ReportResult).
    `sources`: the dataset paths named in the page (default: those read); `skipped_source`: where
    `skipped` came from, for the caller's message."""
    ts, read = _as_trace_set(trace_set)
    sources = list(read if sources is None else sources)
    s = summary if summary is not None else summarize(ts, empty_reason=_why_empty(ts, sources))
    shown, folded = s.sections(max_devices)
    out = Path(out_dir)
    cache = PlotCache(out / PLOT_CACHE) if assets else None
    # plots that changed are drawn (in a child where it pays) while the tables and the page are made
    plots = _group_assets(s, shown, cache)
    with plots.drawing:
        no_plots = plots.why
        skipped_list = not_run(ts, s.frame, [dict(x) for x in (skipped or [])], no_reason=no_reason)
        index = out / "index.html"
        roof = roofline_table(s.frame)
        if assets:
            _write_table_assets(s, out, roof=roof)
        _write_text(index, render_html(s, plots, skipped_list, title=title, sources=sources, roof=roof,
                                       max_devices=max_devices, no_plots=no_plots, cache=cache))
        if assets:
            _write_plot_assets(plots, out)
    if cache is not None and not no_plots:
        cache.prune()
    return ReportResult(index=index, summary=s, skipped=skipped_list, folded=folded, max_devices=max_devices,
                        skipped_source=skipped_source, no_plots=no_plots)


def write_report(trace_set: Union[TraceSet, PathLike, Sequence[PathLike]], out_dir: PathLike,
                 skipped: Optional[Iterable[Mapping[str, Any]]] = None, title: str = "FlashInfer-Bench report",
                 assets: bool = True, max_devices: int = MAX_DEVICES) -> Path:
    """Write `out_dir/index.html` (one self-contained file) and, with assets, the plots and tables
    as separate files (see write_snakemake_report_assets). Returns the index.html path.

    `skipped`: workloads the pipeline did not run, as dicts with definition, solution, workload
    and reason (more keys are shown as extra columns). Every other (solution, workload) pair of
    the dataset without a trace is listed too, as not benchmarked.
    """
    return build_report(trace_set, out_dir, skipped, title, assets, max_devices=max_devices).index


def write_stage_report(ts: TraceSet, summary_out: PathLike, html_out: PathLike,
                       skipped: Sequence[Mapping[str, Any]] = (), problems: Sequence[str] = ()) -> ReportResult:
    """The pipeline's report stage: the short summary `run` ends with (summary_out) and the HTML
    report with its assets next to html_out, from one summarize()."""
    from .views import run_summary_doc

    s = summarize(ts, empty_reason=_why_empty(ts, [str(ts.root)] if ts.root else []))
    labels = workload_labels(ts)
    html_out = Path(html_out)
    res = build_report(ts, html_out.parent, skipped, summary=s, no_reason=NO_REASON_RUN)
    if res.index != html_out:
        res.index.replace(html_out)
        res.index = html_out
    text = run_summary_doc(s, res.skipped, problems, labels, report=str(html_out)).render("text")
    _write_text(Path(summary_out), text)
    return res
