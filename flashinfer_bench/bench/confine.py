"""The hook that confines a runner process before any solution code is loaded.

`confine()` is called once in every runner child, after torch/CUDA are initialised and before
the first solution is imported. Today it sets resource limits and moves into the scratch
directory; the sandboxing work (issue 9: no writes outside `scratch_dir`, no network, only
`readable` paths visible) goes here, behind the same signature.
"""
from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import Any, Dict, List

# A solution that writes a runaway log is stopped at this file size (SIGXFSZ -> RUNTIME_ERROR).
MAX_FILE_BYTES = 8 << 30


def _lower(limit: int, soft: int, hard: int) -> Dict[str, Any]:
    """Set the soft limit to `soft`, never above the hard limit (which we leave alone)."""
    new_soft = soft if hard == resource.RLIM_INFINITY else min(soft, hard)
    resource.setrlimit(limit, (new_soft, hard))
    return {"soft": new_soft, "hard": hard}


def confine(scratch_dir: Path, readable: List[Path]) -> Dict[str, Any]:
    """Limit this process; return a description of what was applied (recorded by the worker)."""
    scratch_dir = Path(scratch_dir)
    scratch_dir.mkdir(parents=True, exist_ok=True)
    applied: Dict[str, Any] = {"sandbox": "rlimits-only", "scratch_dir": str(scratch_dir), "readable": [str(p) for p in readable]}
    limits: Dict[str, Any] = {}
    # no core files: a crashing solution must not spend seconds writing gigabytes of core
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
    limits["core"] = 0
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    limits["fsize"] = _lower(resource.RLIMIT_FSIZE, MAX_FILE_BYTES, hard)
    applied["rlimits"] = limits
    os.chdir(scratch_dir)
    os.environ["TMPDIR"] = str(scratch_dir)
    applied["cwd"] = str(scratch_dir)
    return applied
