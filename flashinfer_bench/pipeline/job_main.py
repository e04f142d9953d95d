"""Command line of the workflow's validate, compile, aggregate and report jobs.

The rules call this file by path from `shell:` (like the benchmark rule's thin client) instead of
Snakemake's `script:` wrapper: the wrapper starts Python with a preamble that unpickles the job's
`snakemake` object, which imports Snakemake itself (0.4-1 s of CPU a job, more than most of these
jobs take; on a GPU box the first build and the final report sit on the critical path). When the
job server runs (local runs: `pipeline/job_server.py`), the job runs in a fork of it, where
pydantic, pandas and the report code are already imported.

    python .../job_main.py compile --solution-file F --definition-file F --out F --log F [--cache-dir D]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

if TYPE_CHECKING:
    import argparse


def _parser() -> "argparse.ArgumentParser":
    import argparse

    ap = argparse.ArgumentParser(prog="job_main.py", description=__doc__)
    sub = ap.add_subparsers(dest="job", required=True)

    v = sub.add_parser("validate", help="validate one dataset file and write its report")
    v.add_argument("--rule", required=True, choices=["validate_definition", "validate_solution", "validate_workloads"])
    v.add_argument("--input", required=True)
    v.add_argument("--out", required=True)
    v.add_argument("--log", required=True)

    c = sub.add_parser("compile", help="build one solution into the artifact cache")
    c.add_argument("--dataset", required=True)
    c.add_argument("--solution-file", required=True, help="relative to --dataset")
    c.add_argument("--definition-file", required=True, help="relative to --dataset")
    c.add_argument("--out", required=True)
    c.add_argument("--log", required=True)
    c.add_argument("--cache-dir", default="")

    a = sub.add_parser("aggregate", help="merge this run's traces of one definition into the dataset")
    a.add_argument("--dataset", required=True)
    a.add_argument("--definition", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("--log", required=True)
    a.add_argument("--save-results", required=True, help="True or False")
    a.add_argument("traces", nargs="*")

    r = sub.add_parser("report", help="write the plain summary and the HTML report")
    r.add_argument("--dataset", required=True)
    r.add_argument("--plan-notes", required=True, help="JSON file with the plan's skipped pairs and problems")
    r.add_argument("--summary", required=True)
    r.add_argument("--html", required=True)
    r.add_argument("--log", required=True)
    r.add_argument("--save-results", required=True, help="True or False")
    r.add_argument("--aggregates", nargs="*", default=[])
    r.add_argument("--builds", nargs="*", default=[])
    return ap


def _flag(text: str) -> bool:
    return text.strip().lower() in ("true", "1", "yes")


def main(argv: Optional[List[str]] = None) -> int:
    a = _parser().parse_args(argv)
    from flashinfer_bench.pipeline import jobs

    if a.job == "validate":
        jobs.validate_file_job(a.input, a.out, a.rule, a.log)
    elif a.job == "compile":
        dataset = Path(a.dataset).resolve()
        jobs.compile_job(
            solution_file=str(dataset / a.solution_file),
            definition_file=str(dataset / a.definition_file),
            out=a.out,
            cache_dir=a.cache_dir or None,
            log_path=a.log,
        )
    elif a.job == "aggregate":
        jobs.aggregate_job(
            definition=a.definition,
            trace_files=list(a.traces),
            dataset=str(Path(a.dataset).resolve()),
            out=a.out,
            save_results=_flag(a.save_results),
            log=a.log,
        )
    else:
        notes = json.loads(Path(a.plan_notes).read_text())
        jobs.report_job(
            dataset=str(Path(a.dataset).resolve()),
            aggregates=list(a.aggregates),
            builds=list(a.builds),
            summary_out=a.summary,
            html_out=a.html,
            skipped_json=json.dumps(notes["skipped"]),
            problems_json=json.dumps(notes["problems"]),
            save_results=_flag(a.save_results),
            log=a.log,
        )
    return 0


def _in_job_server(argv: List[str]) -> Optional[int]:
    """The job's exit status when a running job server ran it in a fork (its imports already
    done there: `pipeline/job_server.py`), else None: the caller then runs the job itself (a job
    never waits for a server that is still starting). The zygote's client is loaded by path:
    importing the package would cost what the fork saves."""
    import importlib.util
    import os

    path = Path(__file__).resolve().parents[1] / "compile" / "zygote.py"
    spec = importlib.util.spec_from_file_location("_fib_zygote", path)
    if spec is None or spec.loader is None:
        return None
    zygote = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zygote)
    if not zygote.enabled():
        return None
    s = zygote.connect(zygote.socket_path(), timeout=1.0)
    if s is None:
        return None
    try:
        # no time limit: Snakemake's own limits apply to the job; killing it kills the child
        how, rc = zygote.ask(s, "job_main", {"job_main": list(argv), "cwd": os.getcwd(), "env": dict(os.environ)}, [0, 1, 2], None)
    finally:
        s.close()
    if how == "refused":
        return None
    return 1 if rc is None else rc  # the child started: never run the job a second time


if __name__ == "__main__":
    rc = _in_job_server(sys.argv[1:])
    if rc is None:
        if sys.flags.no_site:  # started with -S (fast path above): site-packages now
            import site

            site.main()
        root = str(Path(__file__).resolve().parents[2])  # a checkout that is not pip-installed
        if root not in sys.path:
            sys.path.append(root)
    sys.exit(main() if rc is None else rc)
