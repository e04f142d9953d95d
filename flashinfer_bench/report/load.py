"""Load one or several dataset directories into one TraceSet for reporting.

Several `--local` paths are merged (for example an H100 run and a CPU run kept in separate
folders). The first definition or solution of a name wins; exact duplicate traces (same key and
timestamp) are dropped so a dataset passed twice is not counted twice.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence, Set, Tuple, Union

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
