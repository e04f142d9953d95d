"""The build's child process: `python -m flashinfer_bench.compile.child JOB.json`.

Runs the language's builder on the staged sources and writes RESULT.json next to the job. The
parent captures stdout/stderr as the build log. Everything a solution does at import or warm-up
happens here, confined (compile/confine.py) before any of it runs, so it cannot crash, hang or
pollute the caller, write outside the build directory, or leave a process behind.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict

from .builders.common import RESULT, BuildFailure, BuildSkipped, Outcome


def run_job(job: Dict[str, Any]) -> Outcome:
    lang = job["language"]
    if lang in ("python", "triton", "tilelang"):
        from .builders import python_like as builder
    elif job["binding"] == "torch":
        from .builders import torch_ext as builder  # type: ignore[no-redef]
    else:
        from .builders import tvm_ffi as builder  # type: ignore[no-redef]
    return builder.build(job)


def die_with_parent() -> None:
    """Get SIGKILLed when the building process dies (Linux), so a killed build leaves no orphan
    that keeps working; exit at once if it is already gone. Not where a keeper holds this build
    (FIB_BUILD_KEPT, `sandbox/keeper.py`): dying by its own death signal, this process would hand
    what the build started in a session of its own to init before the keeper could kill it
    whole."""
    parent = int(os.environ.get("FIB_BUILD_PARENT_PID", "0"))
    if os.environ.pop("FIB_BUILD_KEPT", "") == "1":
        if parent and os.getppid() != parent:
            os._exit(1)
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if parent and os.getppid() != parent:
        os._exit(1)


def main(argv: list) -> int:
    die_with_parent()
    job_path = Path(argv[1])
    job = json.loads(job_path.read_text(encoding="utf-8"))
    from .confine import confine_build, kill_leftovers

    sandbox = confine_build(Path(job["work_dir"]))
    try:
        outcome = run_job(job)
    except BuildFailure as e:
        outcome = Outcome.failed(e.message, e.details)
    except BuildSkipped as e:
        outcome = Outcome.skipped(str(e))
    except BaseException as e:  # a builder bug or untrusted code: keep the traceback as the cause
        outcome = Outcome.failed(f"the build raised {type(e).__name__}: {e}", traceback.format_exc())
    left = kill_leftovers()
    outcome.info = {**(outcome.info or {}), "build_sandbox": sandbox["sandbox"], **({"killed_leftovers": left} if left else {})}
    sys.stdout.flush()
    sys.stderr.flush()
    (job_path.parent / RESULT).write_text(json.dumps(asdict(outcome), default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
