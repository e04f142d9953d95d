"""`flashinfer-bench validate --local DIR`: check datasets and print every problem.

Exit status: 0 when no dataset has an error (warnings are printed but do not fail), 1 when any
has, 2 on a usage error or an internal error (reported with its traceback, never silently).
"""
from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List

if TYPE_CHECKING:  # the package's data layer loads when the command runs, not at CLI start
    from flashinfer_bench.data.io import Problem


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "validate",
        help="check datasets (definitions, solutions, workloads, traces) and print every problem",
        description="Check one or more datasets in the FlashInfer Trace format: the JSON and "
        "JSONL files parse and fit the format (schema/*.json), shapes, references, constraints (evaluated "
        "against every workload), workload inputs (safetensors files, scalar types), "
        "solution sources and entry points, unique names, and traces that point at known "
        "definitions. Prints every error and warning as FILE[:LINE]: FIELD: MESSAGE.",
    )
    p.add_argument(
        "--local", action="append", metavar="DIR", default=None,
        help="dataset directory (or TraceSet .json bundle); repeat to check several "
        "(default: $FLASHINFER_BENCH_DATASET_PATH / $FIB_DATASET_PATH or ./flashinfer-trace)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.add_argument("--no-warnings", action="store_true", help="print errors only")
    p.add_argument(
        "--no-files", action="store_true",
        help="do not open safetensors inputs (only their paths are checked)",
    )
    p.add_argument("--log-level", default="WARNING", help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def _paths(args: argparse.Namespace) -> List[Path]:
    if args.local:
        return [Path(x) for x in args.local]
    from flashinfer_bench.env import dataset_path

    return [dataset_path()]


def _problem_dict(p: Problem) -> Dict[str, Any]:
    return {"level": p.level, "path": p.path, "line": p.line, "field": p.field, "message": p.message, "text": str(p)}


def _counts(ts: Any) -> Dict[str, int]:
    return {
        "definitions": len(ts.definitions),
        "solutions": len(ts.all_solutions()),
        "workloads": sum(len(v) for v in ts.workloads.values()),
        "traces": len(ts.all_traces()),
    }


def run(args: argparse.Namespace) -> int:
    from flashinfer_bench.data.validate import check_dataset

    reports = []
    for path in _paths(args):
        try:
            ts, problems = check_dataset(path, check_files=not args.no_files)
        except Exception as e:  # noqa: BLE001 - a bug of ours: say so, with the traceback, exit 2
            print(
                f"flashinfer-bench validate: internal error while checking {path}: "
                f"{type(e).__name__}: {e}\n(this is a bug in flashinfer-bench, not in the dataset; "
                "traceback follows)",
                file=sys.stderr,
            )
            traceback.print_exc(file=sys.stderr)
            return 2
        reports.append((path, problems, _counts(ts)))

    any_error = any(p.level == "error" for _, probs, _ in reports for p in probs)
    if args.format == "json":
        out = {
            "ok": not any_error,
            "datasets": [
                {
                    "path": str(path),
                    "counts": counts,
                    "ok": not any(p.level == "error" for p in probs),
                    "errors": sum(p.level == "error" for p in probs),
                    "warnings": sum(p.level == "warning" for p in probs),
                    "problems": [
                        _problem_dict(p) for p in probs if not (args.no_warnings and p.level == "warning")
                    ],
                }
                for path, probs, counts in reports
            ],
        }
        print(json.dumps(out, indent=2))
    else:
        for path, probs, counts in reports:
            for p in probs:
                if args.no_warnings and p.level == "warning":
                    continue
                print(f"{p.level}: {p}")
            n_err = sum(p.level == "error" for p in probs)
            n_warn = sum(p.level == "warning" for p in probs)
            verdict = "FAILED" if n_err else "OK"
            what = ", ".join(f"{n} {k}" for k, n in counts.items())
            print(
                f"{path}: {verdict}: {n_err} error{'s' * (n_err != 1)}, "
                f"{n_warn} warning{'s' * (n_warn != 1)} ({what})"
            )
    return 1 if any_error else 0
