"""Load one or several dataset directories into one TraceSet for reporting.

Several `--local` paths are merged (for example an H100 run and a CPU run kept in separate
folders). The first definition or solution of a name wins; exact duplicate traces (same key and
timestamp) are dropped so a dataset passed twice is not counted twice.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Set, Tuple, Union

from flashinfer_bench.data import Problem, TraceSet, trace_key

PathLike = Union[str, Path]


def merge_trace_sets(sets: Iterable[TraceSet]) -> TraceSet:
    """One TraceSet holding everything of `sets`; later duplicates are recorded as problems."""
    sets = list(sets)
    merged = TraceSet(root=sets[0].root if len(sets) == 1 else None)
    seen: Set[Tuple[str, str, str, str, str]] = set()
    for ts in sets:
        merged.problems.extend(ts.problems)
        for d in ts.definitions.values():
            if d.name in merged.definitions:
                merged.problems.append(
                    Problem(str(ts.root), f"definition {d.name!r} also in an earlier path; first kept", None, "name", "warning")
                )
                continue
            merged.add_definition(d)
        for s in ts.all_solutions():
            if merged.get_solution(s.name) is not None:
                merged.problems.append(
                    Problem(str(ts.root), f"solution {s.name!r} also in an earlier path; first kept", None, "name", "warning")
                )
                continue
            merged.add_solution(s)
        known_workloads = {(w.definition, w.workload.uuid) for ws in merged.workloads.values() for w in ws}
        for ws in ts.workloads.values():
            for w in ws:
                if (w.definition, w.workload.uuid) not in known_workloads:
                    merged.add_workload(w)
                    known_workloads.add((w.definition, w.workload.uuid))
        for t in ts.all_traces():
            key = trace_key(t) + (t.evaluation.timestamp if t.evaluation else "",)
            if key in seen:
                continue
            seen.add(key)
            merged.add_trace(t)
    return merged


def load_paths(paths: Sequence[PathLike]) -> TraceSet:
    """Load dataset directories (or single-file TraceSet bundles) and merge them."""
    if not paths:
        raise ValueError("no dataset path given")
    sets = []
    for p in paths:
        p = Path(p)
        if p.is_file():
            sets.append(TraceSet.load(p, strict=False))
        else:
            sets.append(TraceSet.from_path(p))
    return merge_trace_sets(sets)


def explain_no_traces(paths: Sequence[PathLike], ts: Optional[TraceSet] = None) -> str:
    """Why a report has no result traces, for a person: per path, which trace files were read and
    what their lines were (workload lines without an evaluation, lines that did not parse), or
    that there is no traces/ folder at all."""
    parts: List[str] = []
    for p in paths:
        p = Path(p)
        if p.is_file():
            parts.append(f"{p} (a TraceSet bundle) holds no result trace")
            continue
        tdir = p / "traces"
        if not tdir.is_dir():
            parts.append(f"{p} has no traces/ folder: nothing has been benchmarked into it yet "
                         f"(flashinfer-bench run --local {p})")
            continue
        files = sorted(tdir.rglob("*.jsonl"))
        if not files:
            others = sorted(x.name for x in tdir.rglob("*") if x.is_file())[:3]
            parts.append(f"{tdir} holds no *.jsonl file" + (f" (only {', '.join(others)})" if others else ""))
            continue
        lines = empty = no_eval = bad = results = 0
        for f in files:
            try:
                text = f.read_text(encoding="utf-8", errors="replace")
            except OSError:
                bad += 1
                continue
            for line in text.splitlines():
                lines += 1
                if not line.strip():
                    empty += 1
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    bad += 1
                    continue
                if not isinstance(obj, dict):
                    bad += 1
                elif not obj.get("evaluation"):
                    no_eval += 1
                else:
                    results += 1
        names = ", ".join(str(f.relative_to(p)) for f in files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        what = [f"{no_eval} without an evaluation (workload lines, not results)"] if no_eval else []
        if bad:
            what.append(f"{bad} that did not parse as JSON objects")
        if results:
            what.append(f"{results} with an evaluation that failed validation (see the loading problems)")
        if empty == lines:
            what = ["all empty"]
        parts.append(f"read {len(files)} trace file(s) under {tdir} ({names}): {lines} line(s), "
                     + (", ".join(what) if what else "none of them a result"))
    if not parts:
        parts.append("no dataset path was given (an in-memory TraceSet without traces)")
    problems = [x for x in (ts.problems if ts is not None else []) if "traces" in str(getattr(x, "path", ""))]
    tail = f" First loading problem: {problems[0]}" if problems else ""
    return "No result traces: " + "; ".join(parts) + "." + tail
