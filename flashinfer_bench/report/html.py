"""One self-contained HTML report (plots inlined as base64 SVG images, a few lines of vanilla JS to
sort tables, no network), plus the same plots and tables as separate files for Snakemake's report.
"""
from __future__ import annotations

import base64
import html
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import pandas as pd

from flashinfer_bench.data import EvaluationStatus, TraceSet

from .frame import rows_of
from .plots import EXT, MIME, PLOT_KINDS, group_plots, records
from .render import TITLES, fmt_number, to_csv
from .roofline import roofline_table
from .summary import Summary, summarize
from .views import group_title

PathLike = Union[str, Path]
LOG_CAP = 20000
SKIPPED_COLUMNS = ["definition", "solution", "workload", "reason"]

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1400px;padding:0 1.2em 3em;color:#1d2530;background:#fff}
h1{margin:.6em 0 .2em}h2{border-bottom:2px solid #dde3ea;padding-bottom:.2em;margin-top:1.6em}h3{margin-top:1.2em;color:#2b4a6f}
nav{background:#f4f6f9;padding:.5em .8em;border-radius:6px;font-size:.92em}nav a{margin-right:1em}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.86em}th,td{border:1px solid #d5dbe2;padding:.25em .55em;text-align:left;vertical-align:top;white-space:nowrap}
th{background:#eef2f6;white-space:nowrap}table.sortable th{cursor:pointer}table.sortable th[aria-sort=ascending]::after{content:" \\25B2"}table.sortable th[aria-sort=descending]::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums}.ok{color:#17703a}.bad{color:#b42318;font-weight:600}.muted{color:#6b7785}
.plots{display:flex;flex-wrap:wrap;gap:.6em}.plots figure{margin:0}.plots img{width:560px;max-width:100%;height:auto;border:1px solid #e2e6eb}
.plots figcaption{font-size:.8em;color:#6b7785}details{margin:.3em 0}summary{cursor:pointer}pre{background:#f6f8fa;padding:.6em;overflow:auto;max-height:28em;font-size:.82em}
.totals{font-size:1.05em}.note{background:#fff8e6;border-left:4px solid #f0b429;padding:.3em .7em;margin:.3em 0}.scroll{overflow-x:auto}
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


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def _rows(df: pd.DataFrame, cols: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    """Rows as plain dicts of Python values (iterrows builds a Series per row: slow)."""
    return rows_of(df, cols)


def html_table(df: pd.DataFrame, columns: Optional[Sequence[str]] = None, sortable: bool = True, cls: str = "") -> str:
    """A table of raw values: formatted for people, raw numbers kept in data-sort."""
    if df.empty:
        return '<p class="muted">(none)</p>'
    cols = list(columns or df.columns)
    head = "".join(f"<th>{_e(TITLES.get(c, c))}</th>" for c in cols)
    body = []
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
            cells.append(f"<td{attrs}>{_e(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    klass = " ".join(x for x in ("sortable" if sortable else "", cls) if x)
    return (f'<div class="scroll"><table class="{klass}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _matrix_html(sub: pd.DataFrame) -> str:
    """Workloads x solutions; a cell shows latency and speedups, or the failure status."""
    if sub.empty:
        return '<p class="muted">(none)</p>'
    sols = sorted(sub["solution"].unique())
    with_base = sub["speedup_vs_baseline"].notna().any()
    order = sub.drop_duplicates("workload").sort_values(["batch", "workload_label"], kind="stable")
    cols = ["workload", "solution", "timed", "passed", "status", "latency_ms", "speedup", "speedup_vs_baseline"]
    by_pair = {(r["workload"], r["solution"]): r for r in _rows(sub, cols)}
    head = "<th>workload</th>" + "".join(f"<th>{_e(s)}</th>" for s in sols)
    rows = []
    for w in _rows(order, ["workload", "workload_label", "batch"]):
        batch = w["batch"]
        cells = [f'<td data-sort="{float(batch)!r}">{_e(w["workload_label"])}</td>' if _is_num(batch) else f"<td>{_e(w['workload_label'])}</td>"]
        for s in sols:
            r = by_pair.get((w["workload"], s))
            if r is None:
                cells.append('<td class="muted" data-sort="">not run</td>')
                continue
            if r["timed"]:
                text = f"{r['latency_ms']:.4g} ms"
                if _is_num(r["speedup"]):
                    text += f" · {fmt_number('speedup', r['speedup'])} ref"
                if with_base and _is_num(r["speedup_vs_baseline"]):
                    text += f" · {fmt_number('speedup', r['speedup_vs_baseline'])} base"
                cells.append(f'<td class="num" data-sort="{float(r["latency_ms"])!r}">{_e(text)}</td>')
            elif r["passed"]:
                cells.append('<td class="bad">PASSED, no latency</td>')
            else:
                cells.append(f'<td class="bad">{_e(r["status"])}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table class="sortable"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _img(image: bytes, alt: str) -> str:
    return f'<img alt="{_e(alt)}" src="data:{MIME};base64,{base64.b64encode(image).decode()}">'


def _environment_html(frame: pd.DataFrame) -> str:
    if frame.empty:
        return '<p class="muted">(no traces)</p>'
    parts = []
    for hw, g in frame.groupby("hardware", sort=True):
        values: Dict[str, Dict[str, int]] = {}
        for env in g["environment"]:
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
        parts.append(f"<h3>{_e(hw)}</h3><p class=muted>{len(g)} traces</p><table><tbody>{rows}</tbody></table>")
    return "".join(parts)


def _failures_html(frame: pd.DataFrame) -> str:
    fails = frame[~frame["timed"]] if not frame.empty else frame
    if fails.empty:
        return '<p class="ok">No failed traces.</p>'
    out = []
    for r in _rows(fails, ["definition", "solution", "workload_label", "hardware", "status", "passed", "log"]):
        log = str(r["log"] or "")
        if len(log) > LOG_CAP:
            log = log[:LOG_CAP] + f"\n... ({len(log) - LOG_CAP} more characters cut)"
        status = r["status"] if not r["passed"] else "PASSED, no latency"
        head = f"{r['definition']} / {r['solution']} / {r['workload_label']} on {r['hardware']}: "
        out.append(f"<details><summary>{_e(head)}<span class=bad>{_e(status)}</span></summary>"
                   f"<pre>{_e(log) if log.strip() else '(no log recorded)'}</pre></details>")
    return "".join(out)


def _skipped_html(skipped: Sequence[Mapping[str, Any]]) -> str:
    if not skipped:
        return '<p class="muted">No workloads were skipped.</p>'
    df = pd.DataFrame([dict(x) for x in skipped])
    cols = SKIPPED_COLUMNS + [c for c in df.columns if c not in SKIPPED_COLUMNS]
    df = df.reindex(columns=cols).fillna("")
    return html_table(df)


def _group_assets(s: Summary) -> Dict[tuple, Dict[str, Optional[bytes]]]:
    """The plots of every (definition, hardware) group: the frame is split once, in plain rows."""
    if s.frame.empty:
        return {}
    rows: Dict[tuple, list] = {}
    keys = zip(s.frame["definition"], s.frame["hardware"])
    for key, r in zip(keys, records(s.frame)):
        rows.setdefault(key, []).append(r)
    return {(d, hw): group_plots(rows.get((d, hw), []), group_title(d, hw)) for d, hw in s.groups()}


PLOT_CAPTIONS = {
    "latency": "Median latency vs batch, log-log (bars: p10-p90 where recorded; dashed: reference).",
    "speedup": "Speedup over the definition's reference vs batch (dashed: 1x).",
    "peak_bw": "Achieved DRAM bandwidth as a share of the device's peak (dotted: 100%).",
}


def render_html(s: Summary, plots: Mapping[tuple, Mapping[str, Optional[bytes]]], skipped: Sequence[Mapping[str, Any]] = (),
                title: str = "FlashInfer-Bench report", sources: Sequence[str] = (),
                roof: Optional[pd.DataFrame] = None) -> str:
    """The whole report as one HTML string (`roof`: roofline_table(s.frame), when already made)."""
    t = s.totals
    defs = list(dict.fromkeys([d for d, _ in s.groups()] + sorted(s.frame["definition"].unique() if not s.frame.empty else [])))
    nav = "".join(f'<a href="#def-{slug(d)}">{_e(d)}</a>' for d in defs)
    body = [f"<h1>{_e(title)}</h1>"]
    if sources:
        body.append(f"<p class=muted>Dataset: {_e(', '.join(sources))}</p>")
    body.append(f'<nav><a href="#summary">Summary</a>{nav}<a href="#failures">Failures</a>'
                f'<a href="#skipped">Skipped</a><a href="#environment">Environment</a><a href="#notes">Notes</a></nav>')
    body.append('<section id="summary"><h2>Summary</h2>')
    body.append(f"<p class=totals>Traces: <b>{t['traces']}</b> total, <b class=ok>{t['passed']}</b> passed, "
                f"<b class={'bad' if t['failed'] else 'ok'}>{t['failed']}</b> failed; {t['definitions']} definitions, "
                f"{t['solutions']} solutions, {t['hardware']} devices. Each device is reported on its own: results "
                f"of different devices are never averaged together.</p>")
    body.append(html_table(s.counts, sortable=False))
    body.append("<h3>Leaderboard (per definition and device)</h3>")
    lb_cols = [c for c in s.leaderboard.columns if not (c in ("geomean_speedup_vs_baseline", "median_pct_of_peak_bw") and s.leaderboard[c].isna().all())]
    body.append(html_table(s.leaderboard, lb_cols))
    if s.notes:
        body.append("".join(f'<div class="note">{_e(n)}</div>' for n in s.notes[:5]))
    body.append("</section>")
    if roof is None:
        roof = roofline_table(s.frame)
    for d in defs:
        body.append(f'<section id="def-{slug(d)}"><h2>{_e(d)}</h2>')
        about = s.about.get(d, "not in the dataset any more: shown without shapes or roofline")
        body.append(f"<p class=muted>{_e(about)}</p>")
        for (dd, hw), kinds in plots.items():
            if dd != d:
                continue
            sub = s.frame[(s.frame["definition"] == d) & (s.frame["hardware"] == hw)]
            body.append(f"<h3>on {_e(hw)}</h3>")
            figs = []
            for kind in PLOT_KINDS:
                image = kinds.get(kind)
                if image is None:
                    why = "no share of peak: the device's peak bandwidth is unknown" if kind == "peak_bw" else "no correct timed results to plot"
                    figs.append(f"<figure><figcaption>{_e(kind)}: {_e(why)}.</figcaption></figure>")
                else:
                    figs.append(f"<figure>{_img(image, f'{d} on {hw}: {kind}')}<figcaption>{_e(PLOT_CAPTIONS[kind])}</figcaption></figure>")
            body.append(f'<div class="plots">{"".join(figs)}</div>')
            lb = s.leaderboard[(s.leaderboard["definition"] == d) & (s.leaderboard["hardware"] == hw)]
            body.append("<h4>Solutions</h4>" + html_table(lb, [c for c in lb_cols if c not in ("definition", "hardware")]))
            body.append("<h4>Latency and speedup per workload</h4>" + _matrix_html(sub))
            b = s.best[(s.best["definition"] == d) & (s.best["hardware"] == hw)]
            bcols = [c for c in b.columns if c not in ("definition", "hardware", "workload", "batch")
                     and not (c in ("speedup_vs_baseline", "samples") and b[c].isna().all())]
            body.append("<h4>Best per workload</h4>" + html_table(b, bcols))
            r = roof[(roof["definition"] == d) & (roof["hardware"] == hw)]
            rcols = [c for c in r.columns if c not in ("definition", "hardware", "workload", "batch")
                     and not (c in ("flops", "achieved_tflops", "peak_tflops", "pct_of_peak_flops") and r[c].isna().all())]
            body.append("<h4>Roofline</h4>" + html_table(r, rcols))
        body.append("</section>")
    body.append(f'<section id="failures"><h2>Failures</h2>{_failures_html(s.frame)}</section>')
    body.append(f'<section id="skipped"><h2>Skipped workloads</h2>{_skipped_html(skipped)}</section>')
    body.append(f'<section id="environment"><h2>Environment per device</h2>{_environment_html(s.frame)}</section>')
    notes = "".join(f"<li>{_e(n)}</li>" for n in s.notes) or "<li>None.</li>"
    body.append(f'<section id="notes"><h2>Notes</h2><ul>{notes}</ul></section>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body>{''.join(body)}"
            f"<script>{JS}</script></body></html>\n")


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
    tables/{leaderboard,best,roofline}.html, {leaderboard,matrix,best,roofline,counts}.csv.
    """
    out = Path(out_dir)
    written: Dict[str, List[Path]] = {"plots": [], "tables": [], "csv": []}
    plot_dir = out / "plots"
    plot_dir.mkdir(parents=True, exist_ok=True)  # exists even with nothing to plot: a rule's directory() output
    keep = set()
    for (d, hw), kinds in plots.items():
        for kind, image in kinds.items():
            if image is None:
                continue
            p = plot_dir / f"{slug(d)}__{slug(hw)}__{kind}.{EXT}"
            _write_bytes(p, image)
            keep.add(p.name)
            written["plots"].append(p)
    if plot_dir.is_dir():  # drop plots of groups that no longer exist, and our old PNGs (only our own file names)
        for old in plot_dir.glob("*__*__*.*"):
            stem, _, ext = old.name.rpartition(".")
            if old.name not in keep and ext in (EXT, "png") and stem.rsplit("__", 1)[-1] in PLOT_KINDS:
                old.unlink()
    if roof is None:
        roof = roofline_table(summary.frame)
    tables = {"leaderboard": summary.leaderboard, "best": summary.best, "roofline": roof}
    for name, df in tables.items():
        p = out / "tables" / f"{name}.html"
        _write_text(p, _standalone(f"FlashInfer-Bench {name}", html_table(df)))
        written["tables"].append(p)
    for name, df in {**tables, "matrix": summary.matrix, "counts": summary.counts}.items():
        p = out / f"{name}.csv"
        _write_text(p, to_csv(df))
        written["csv"].append(p)
    return written


def write_report(trace_set: Union[TraceSet, PathLike, Sequence[PathLike]], out_dir: PathLike,
                 skipped: Optional[Iterable[Mapping[str, Any]]] = None, title: str = "FlashInfer-Bench report",
                 assets: bool = True) -> Path:
    """Write `out_dir/index.html` (one self-contained file) and, with assets, the plots and tables
    as separate files (see write_snakemake_report_assets). Returns the index.html path.

    `skipped`: workloads the pipeline did not run, as dicts with definition, solution, workload
    and reason (more keys are shown as extra columns).
    """
    ts, sources = _as_trace_set(trace_set)
    s = summarize(ts)
    plots = _group_assets(s)
    skipped_list = [dict(x) for x in (skipped or [])]
    out = Path(out_dir)
    index = out / "index.html"
    roof = roofline_table(s.frame)
    _write_text(index, render_html(s, plots, skipped_list, title=title, sources=sources, roof=roof))
    if assets:
        write_snakemake_report_assets(s, plots, out, roof=roof)
    return index
