"""`flashinfer-bench report {summary,best,roofline,html}`: turn traces into answers.

pandas is imported only when a report command runs, and matplotlib only when `report html` draws
its plots, so `flashinfer-bench --help` and the other subcommands stay fast.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict, List

FORMATS = ("text", "csv", "json", "markdown")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--local", action="append", metavar="PATH", default=None,
                   help="dataset directory (or TraceSet .json bundle); repeat to merge several "
                        "(default: $FLASHINFER_BENCH_DATASET_PATH / $FIB_DATASET_PATH or ./flashinfer-trace)")
    p.add_argument("--log-level", default="WARNING", help=argparse.SUPPRESS)
    p.add_argument("--max-devices", type=int, default=None, metavar="N",
                   help="per definition, give the N devices with the most traces a section of their own and fold "
                        "the others into one row each (default 8; 0: every device)")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    rep = subparsers.add_parser("report", help="summaries, best solutions, roofline and an HTML report from traces",
                                description="Reports from the traces of one or more datasets; every table is per "
                                            "definition and device (devices are never averaged together).")
    sub = rep.add_subparsers(dest="report_command", metavar="REPORT")
    rep.set_defaults(func=lambda args: (rep.print_help(), 2)[1])
    for name, helptext in (
        ("summary", "traces by status; per definition and device a leaderboard and a solutions x workloads table"),
        ("best", "per definition, device and workload the fastest correct solution, and whether the win is inside the noise"),
        ("roofline", "achieved GB/s and TFLOP/s and the share of the device's peak, per trace"),
    ):
        p = sub.add_parser(name, help=helptext, description=helptext)
        _common(p)
        p.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
        p.add_argument("--table", default="", help="with --format csv: which table to print "
                       "(summary: leaderboard|matrix|counts; best: best; roofline: roofline)")
        p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of standard output")
        p.set_defaults(func=run, report_command=name)
    h = sub.add_parser("html", help="write one self-contained HTML report (plots inlined) plus SVG/CSV assets",
                       description="Write DIR/index.html (self-contained), DIR/plots/*.svg, DIR/tables/*.html, DIR/*.csv.")
    _common(h)
    h.add_argument("--output", "-o", metavar="DIR", default="results/report", help="output directory (default: results/report)")
    h.add_argument("--skipped", metavar="FILE", help="why pairs were not run: the pipeline's results/plan/notes.json, or a "
                   "JSON list (or JSON lines) of {definition, solution, workload, reason} (default: RESULTS/plan/notes.json "
                   "when it exists)")
    h.add_argument("--results", metavar="DIR", default="results",
                   help="the pipeline's results directory, where --skipped is looked for (default: results)")
    h.add_argument("--title", default="FlashInfer-Bench report")
    h.add_argument("--no-assets", action="store_true", help="write only index.html")
    h.set_defaults(func=run, report_command="html")


def _paths(args: argparse.Namespace) -> List[Path]:
    if args.local:
        return [Path(p) for p in args.local]
    from flashinfer_bench.env import dataset_path

    return [dataset_path()]


def _read_skipped(path: str) -> List[Dict[str, Any]]:
    """The skipped pairs in a file: a JSON list, JSON lines, or the pipeline's plan notes
    ({"skipped": [...], "problems": [...]})."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = [json.loads(line) for line in text.splitlines() if line.strip()]
    if isinstance(data, dict) and isinstance(data.get("skipped"), list):
        data = data["skipped"]
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise ValueError(f"{path}: expected a JSON list of objects (or the pipeline's plan/notes.json)")
    return data


def _skipped_for(args: argparse.Namespace, ts: Any) -> tuple:
    """(skipped pairs, where they came from): --skipped, else RESULTS/plan/notes.json when it
    exists, keeping the pairs of definitions this dataset holds (the notes may be another run's)."""
    if args.skipped:
        return _read_skipped(args.skipped), args.skipped
    notes = Path(args.results) / "plan" / "notes.json"
    if not notes.is_file():
        return [], ""
    try:
        data = _read_skipped(str(notes))
    except (OSError, ValueError):
        return [], ""
    mine = [x for x in data if x.get("definition") in ts.definitions]
    return mine, str(notes) if mine else ""


def _has_results(ts: Any) -> bool:
    return any(not t.is_workload for t in ts.all_traces())


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except BrokenPipeError:  # `report ... | head`: the reader left; not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _run(args: argparse.Namespace) -> int:
    paths = _paths(args)
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        print(f"flashinfer-bench report: no such dataset: {', '.join(missing)}", file=sys.stderr)
        return 1
    from flashinfer_bench.report import load_paths, summarize
    from flashinfer_bench.report.load import explain_no_traces
    from flashinfer_bench.report.summary import MAX_DEVICES

    max_devices = MAX_DEVICES if args.max_devices is None else args.max_devices
    ts = load_paths(paths)
    reason = "" if _has_results(ts) else explain_no_traces(paths, ts)
    if reason:
        print(f"flashinfer-bench report: {reason}", file=sys.stderr)
    if args.report_command == "html":
        from flashinfer_bench.report.html import build_report

        try:
            skipped, source = _skipped_for(args, ts)
        except (OSError, ValueError) as e:
            print(f"flashinfer-bench report html: cannot read --skipped: {e}", file=sys.stderr)
            return 1
        res = build_report(ts, args.output, skipped=skipped, title=args.title, assets=not args.no_assets,
                           summary=summarize(ts, empty_reason=reason), max_devices=max_devices,
                           sources=[str(p) for p in paths], skipped_source=source)
        print("\n".join(res.lines()))
        return 0
    from flashinfer_bench.report import render_command

    try:
        text = render_command(summarize(ts, empty_reason=reason), args.report_command, args.format, args.table,
                              max_devices=max_devices)
    except ValueError as e:
        print(f"flashinfer-bench report {args.report_command}: {e}", file=sys.stderr)
        return 2
    if args.output:
        from flashinfer_bench.data import atomic_write_text

        atomic_write_text(args.output, text)
        print(f"Wrote {args.output}")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0
