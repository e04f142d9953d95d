"""Writing results into a dataset's traces/ files: one merge rule for every writer (the
workflow's aggregation, `TraceSet.add_traces`, the Python `Benchmark`), so a file written by one
reads the same as a file written by another.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import List, Tuple

from pydantic import ValidationError

from ..atomic import atomic_write_text, file_lock
from .trace import Trace


def trace_key(t: Trace) -> Tuple[str, str, str, str]:
    """Identity of a result: (definition, solution, workload uuid, hardware)."""
    hw = t.evaluation.environment.hardware if t.evaluation else ""
    return (t.definition, t.solution or "", t.workload.uuid, hw)


def merge_traces(target: Path, new: List[Trace]) -> int:
    """Replace traces of the same (definition, solution, workload, hardware); keep every other line.

    Lines we cannot parse are kept verbatim, bytes that are not UTF-8 included (`validate` reports
    them): a run never deletes data it did not make. Returns the number of lines replaced.
    """
    keys = {trace_key(t) for t in new}
    kept: List[str] = []
    replaced = 0
    with file_lock(str(target) + ".lock"):  # removed on release: no lock file stays in traces/
        if target.exists():
            # JSONL lines end at \n only (splitlines() would also cut at U+2028 inside a string)
            for line in target.read_bytes().decode("utf-8", "surrogateescape").split("\n"):
                if not line.strip():
                    continue
                try:
                    old = Trace.model_validate_json(line.encode("utf-8", "surrogateescape"))
                except ValidationError:
                    kept.append(line)
                    continue
                if trace_key(old) in keys:
                    replaced += 1
                    continue
                kept.append(line)
        lines = kept + [t.model_dump_json() for t in new]
        pause = float(os.environ.get("FIB_TEST_AGGREGATE_PAUSE_S", "0") or 0)
        if pause:  # test hook: widens the window in which a kill must leave the old file intact
            time.sleep(pause)
        atomic_write_text(target, "".join(x + "\n" for x in lines), errors="surrogateescape")
    return replaced
