"""Locate the workflow files (Snakefile, rules/, scripts/, schema/, config.yaml).

In a checkout or an editable install they are the repository root; an installed wheel carries
them as package data under flashinfer_bench/_workflow (see pyproject's package-data).
"""
from __future__ import annotations

import os
from pathlib import Path


def workflow_dir() -> Path:
    env = os.environ.get("FIB_WORKFLOW_DIR")
    if env:
        return Path(env)
    pkg = Path(__file__).resolve().parent.parent
    for cand in (pkg.parent, pkg / "_workflow"):
        if (cand / "Snakefile").is_file() and (cand / "rules").is_dir():
            return cand
    raise FileNotFoundError(
        "the flashinfer-bench workflow (Snakefile, rules/) was not found; set FIB_WORKFLOW_DIR"
    )
