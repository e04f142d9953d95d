"""What the workflow's jobs do: `scripts/<stage>.py` (named by each rule's shell command) calls
one of these with its command line's options.

Each job writes its outputs atomically, so a killed run leaves every file old or new.
"""
from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import List, Optional

from flashinfer_bench.data import Definition, Solution, Trace, TraceSet
from flashinfer_bench.data.charge import charged_party
from flashinfer_bench.data.io import atomic_write_json, atomic_write_text, read_json
from flashinfer_bench.data.trace_files import merge_traces  # the one merge rule of traces/ files

logger = logging.getLogger("flashinfer_bench.pipeline")


def _setup_log(path: Optional[str]) -> None:
    """Job log to its file; one-line results also to stderr, so the user sees progress."""
    root = logging.getLogger("flashinfer_bench")
    root.setLevel(logging.INFO)
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        h = logging.FileHandler(path, mode="w")
        h.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)s %(name)s: %(message)s"))
        root.addHandler(h)


def _progress(msg: str) -> None:
    print(f"[flashinfer-bench] {msg}", file=sys.stderr, flush=True)


def _load(path: str, model):
    obj, probs = read_json(Path(path))
    if obj is None:
        raise ValueError("; ".join(str(p) for p in probs))
    return model.model_validate(obj)


# --------------------------------------------------------------------------- validate
def validation_report(file: str, kind: str, plan_notes: str, out: str, log: str) -> None:
    """Record the plan's verdict on one dataset file: the problems `plan.build_plan` found in it
    when the Snakefile was parsed (the same check that decides what the DAG holds), from the
    notes the workflow's onstart writes (`notes_json`)."""
    _setup_log(log)
    found = json.loads(Path(plan_notes).read_text())["by_file"].get(file, [])
    text = f"{file}: {kind}: " + (f"{len(found)} problem(s)\n" if found else "OK\n") + "".join(f"{x}\n" for x in found)
    atomic_write_text(out, text)
    if found:
        _progress(f"validation: {len(found)} problem(s) in {file}")


# --------------------------------------------------------------------------- compile
def compile_job(dataset: str, solution_file: str, definition_file: str, out: str, log: str, cache_dir: str = "") -> None:
    """Build one solution into the artifact cache; `out` gets the BuildResult. The files are
    relative to `dataset` (the rule's params hold them so: moving the dataset re-runs nothing)."""
    from flashinfer_bench.compile import build

    _setup_log(log)
    root = Path(dataset).resolve()
    solution = _load(str(root / solution_file), Solution)
    definition = _load(str(root / definition_file), Definition)
    t0 = time.perf_counter()
    result = build(solution, definition, Path(cache_dir) if cache_dir else None)
    d = result.to_dict()
    atomic_write_json(out, d)
    status = d.get("status")
    hit = " (cache hit)" if d.get("cache_hit") else ""
    _progress(f"compile {solution.name}: {status}{hit} in {time.perf_counter() - t0:.2f} s")
    if status not in ("OK",):
        logger.warning("build of %s: %s\n%s", solution.name, status, d.get("log", ""))


# --------------------------------------------------------------------------- aggregate
def aggregate_job(
    definition: str, trace_files: List[str], dataset: str, out: str, save_results: bool, log: Optional[str] = None,
    op_type: str = "unknown",
) -> None:
    """Merge this run's traces of one definition into <dataset>/traces/<op_type>/<definition>.jsonl
    (when `save_results`); `out` gets them too (the rule's output: a marker)."""
    _setup_log(log)
    new = [Trace.model_validate_json(Path(f).read_text()) for f in trace_files]
    root = Path(dataset).resolve()
    # failures that are the dataset's or the machine's are never a solution's trace in the dataset
    charged = [t for t in new if charged_party(t) != "solution"]
    for t in charged:
        first = (t.evaluation.log or "").splitlines()[0] if t.evaluation else ""
        print(f"[flashinfer-bench] error: {definition} / {t.solution} x {t.workload.uuid}: {first}", file=sys.stderr, flush=True)
    keep = [t for t in new if charged_party(t) == "solution"]
    if save_results and keep:
        target = root / "traces" / op_type / f"{definition}.jsonl"
        replaced = merge_traces(target, keep)
        _progress(f"aggregate {definition}: {len(keep)} traces into {target} ({replaced} replaced)")
    atomic_write_text(out, "".join(t.model_dump_json() + "\n" for t in new))


# --------------------------------------------------------------------------- report
def report_job(
    dataset: str,
    aggregates: List[str],
    builds: List[str],
    summary_out: str,
    html_out: str,
    plan_notes: str,
    save_results: bool,
    log: Optional[str] = None,
) -> None:
    """The plain summary and the HTML report of the dataset's traces (and of this run's, when
    they were not saved), with the pairs the plan skipped and the dataset's problems."""
    _setup_log(log)
    notes = json.loads(Path(plan_notes).read_text())
    ts = TraceSet.from_path(str(Path(dataset).resolve()))
    if not save_results:
        for f in aggregates:
            for line in Path(f).read_text().splitlines():
                if line.strip():
                    ts.add_trace(Trace.model_validate_json(line))
    skipped = notes["skipped"]
    for b in builds:
        d = json.loads(Path(b).read_text())
        if d.get("status") != "OK":
            skipped.append({"definition": "", "solution": Path(b).stem, "workload": "*", "reason": f"build {d.get('status')}: {(d.get('log') or '').strip()[:300]}"})
    problems = notes["problems"]
    try:  # the summary `run` ends with and the HTML report, from one summary of the traces
        from flashinfer_bench.report.html import write_stage_report
    except ImportError as e:  # the report extra (pandas) is optional: the plain summary instead
        from .summary import plain_summary

        text = plain_summary(ts, skipped, problems)
        atomic_write_text(summary_out, text)
        log_msg = f"HTML report unavailable: {e} (pip install 'flashinfer-bench[report]')"
        atomic_write_text(html_out, f"<html><body><pre>{log_msg}\n\n{text}</pre></body></html>\n")
        return
    write_stage_report(ts, summary_out, html_out, skipped, problems)
