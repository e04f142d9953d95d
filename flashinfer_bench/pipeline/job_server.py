"""The workflow's job server: the build zygote (`compile/zygote.py`) that also forks the workflow's
validate, compile, aggregate and report jobs (`scripts/<stage>.py`).

Such a job's Python start with pydantic, pandas and the report code imported is most of what it
costs (a report job 1.2-1.7 s, 0.3 s of it work), so a running server runs the job's script in a
fork instead (`scripts/_job.py` asks it): the child gets the job's stdin/stdout/stderr (passed
over the socket), working directory, environment and arguments, and its exit status becomes the
job's. Builds are served as by the plain zygote. A local run starts the server when it starts
(`turn_on`: the Snakefile's onstart, and `flashinfer-bench run` on a GPU box), so its imports
overlap Snakemake's own start-up.

    python -m flashinfer_bench.pipeline.job_server --socket PATH      # (started by `turn_on`)
"""
from __future__ import annotations

import os
import runpy
import sys
from typing import Dict, List, Optional

from flashinfer_bench.compile import zygote

# What the workflow's jobs import, loaded once while the server waits (builds need only torch).
# report.warm: matplotlib imported and one plot drawn (templates, fonts) for the report job, whose
# code imports matplotlib only when it draws; here the ~0.35 s is paid once, off the critical path.
PRELOAD = ("flashinfer_bench.pipeline.jobs", "flashinfer_bench.compile.build", "pandas", "flashinfer_bench.report.html",
           "flashinfer_bench.report.warm")


def turn_on() -> None:
    """For a local run: builds and workflow jobs of this process and its children fork from the
    job server, started now in the background; unless the environment says FIB_BUILD_ZYGOTE=0."""
    if os.environ.get("FIB_BUILD_ZYGOTE", "1") == "0":
        return
    os.environ["FIB_BUILD_ZYGOTE"] = "1"
    zygote.ensure_started("flashinfer_bench.pipeline.job_server")


def _script_child(req: Dict, fds: List[int]) -> int:
    """Become the job of `req`: the caller's stdio, cwd, environment and arguments, then its
    script, as `python SCRIPT ARGS` would run it."""
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    script = req["script"]
    sys.argv = [script, *req["argv"]]
    sys.path.insert(0, os.path.dirname(script))
    runpy.run_path(script, run_name="__main__")
    return 0


def main(argv: Optional[list] = None) -> int:
    return zygote.main(argv, handlers={"script": _script_child}, preload=PRELOAD)


if __name__ == "__main__":
    sys.exit(main())
