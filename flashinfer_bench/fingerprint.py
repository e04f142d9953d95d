"""One hash of our own code, for everything that must notice an edit of it: the worker's address
(an edited evaluator never talks to a stale worker), the benchmark jobs' evaluator version (an
edited evaluator re-runs the benchmarks) and the job server's address (an edited package never
forks stale code). Standard library only and no package imports: the stdlib-only job clients load
it by path (through `bench/addressing.py` and `compile/zygote.py`).
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path
from typing import Tuple

_PKG = Path(__file__).resolve().parent

# The code an evaluation runs: the evaluator and all it may import (tests/test_import_graph.py's
# ALLOWED["bench"]). An edit anywhere else (the workflow, the report) changes no measurement.
EVALUATOR: Tuple[str, ...] = ("bench", "compile", "data", "sandbox", "atomic.py", "env.py", "device.py", "fingerprint.py")


@lru_cache(maxsize=None)
def code_fingerprint(parts: Tuple[str, ...] = (), salt: str = "") -> str:
    """sha256 (hex) of `salt` and the path and bytes of every .py file of `parts` (sub-packages
    and top-level modules of flashinfer_bench; the whole package when empty).

    The salt is what else the user of the hash depends on: the interpreter for a process that
    keeps running (a worker), a version number for a re-run trigger (which must not depend on the
    interpreter's path: results stay valid on another node). os.walk and plain strings, not
    pathlib's rglob: a benchmark job pays this once, and rglob took 2.5 ms of its ~50 ms."""
    root = str(_PKG)
    cut = len(root) + 1
    rels = []
    for part in parts or ("",):
        if part.endswith(".py"):
            rels.append(part)
            continue
        for d, dirs, names in os.walk(os.path.join(root, part) if part else root):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            rels.extend(os.path.join(d, n)[cut:] for n in names if n.endswith(".py"))
    h = hashlib.sha256(salt.encode())
    for rel in sorted(rels):
        h.update(rel.encode())
        with open(os.path.join(root, rel), "rb") as f:
            h.update(f.read())
    return h.hexdigest()
