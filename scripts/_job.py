"""What every job script of the workflow starts with; standard library only.

The rules run their scripts as plain commands, `$FIB_RUN_PYTHON -S scripts/<stage>.py ...`, not
through Snakemake's `script:` directive, whose wrapper imports Snakemake itself (0.4-1 s of CPU a
job, more than most of these jobs take); `-S` leaves site-packages out until a job needs them
(20-30 ms a job). `start()` then either
- hands the job to the workflow's job server when one runs (local runs: the Snakefile's onstart
  starts it, `flashinfer_bench/pipeline/job_server.py`): the server runs this same script in a fork
  of itself, where pydantic, pandas and the report code are already imported, with the job's
  stdin/stdout/stderr, working directory, environment and arguments; its exit status is the
  job's; or
- loads site-packages and makes the package importable, and the script goes on in this process.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Dict, List, Optional, Sequence, Union

_SERVED = "FIB_JOB_SERVED"  # set in the request: the forked copy of the script runs on


def package_dir() -> Path:
    """flashinfer_bench/: beside scripts/ in a checkout, above it in an installed wheel
    (flashinfer_bench/_workflow/scripts)."""
    here = Path(__file__).resolve().parent
    for cand in (here.parent / "flashinfer_bench", here.parent.parent):
        if (cand / "pipeline" / "job_server.py").is_file():
            return cand
    raise SystemExit(f"{__file__}: the flashinfer_bench package is not beside the workflow")


def load(relpath: str) -> ModuleType:
    """A stdlib-only module of the package, loaded by path (no package import, no site-packages)."""
    name = "_fib_" + relpath.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, package_dir() / relpath)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def start(script: str) -> None:
    """Run `script` (the caller's __file__) in the job server and exit with its status when one
    runs; otherwise return with the package importable."""
    if os.environ.pop(_SERVED, None):
        return  # this is the server's fork: its imports are done
    rc = _in_job_server(os.path.abspath(script))
    if rc is not None:
        sys.exit(rc)
    if sys.flags.no_site:
        import site

        site.main()
    root = str(package_dir().parent)  # a checkout that is not pip-installed
    if root not in sys.path:
        sys.path.append(root)


def _in_job_server(script: str) -> Optional[int]:
    zygote = load("compile/zygote.py")
    if not zygote.enabled():
        return None
    s = zygote.connect(zygote.socket_path(), timeout=1.0)
    if s is None:
        return None  # none runs (a job never waits for one that is still starting)
    req = {"script": script, "argv": sys.argv[1:], "cwd": os.getcwd(), "env": {**os.environ, _SERVED: "1"}}
    try:
        # no time limit: Snakemake's own limits apply to the job; killing it kills the fork
        how, rc = zygote.ask(s, "script", req, [0, 1, 2], None)
    finally:
        s.close()
    if how == "refused":
        return None
    return 1 if rc is None else rc  # the fork started: never run the job a second time


def options(names: Sequence[str], lists: Sequence[str] = (), optional: Sequence[str] = ()) -> Dict[str, Union[str, List[str]]]:
    """The command line's `--name value` options as keyword arguments (`--cache-dir` ->
    cache_dir); an option in `lists` takes every value up to the next option; one in
    `optional` may be left out ("" then). (argparse's import and parser cost ~10 ms a job.)"""
    out: Dict[str, Union[str, List[str]]] = {n: "" for n in optional}
    out.update({n: [] for n in lists})
    known = {*names, *lists, *optional}
    name = None
    for arg in sys.argv[1:]:
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            name = name.replace("-", "_")
            if name not in known:
                sys.exit(f"{sys.argv[0]}: unknown option --{arg[2:]} (expects --{', --'.join(sorted(known))})")
            if eq:
                out[name] = [*out[name], value] if name in lists else value  # type: ignore[list-item]
                name = None
        elif name in lists:
            out[name].append(arg)  # type: ignore[union-attr]
        elif name is not None:
            out[name] = arg
            name = None
        else:
            sys.exit(f"{sys.argv[0]}: unexpected argument {arg!r}")
    missing = [n for n in names if n not in out]
    if missing:
        sys.exit(f"{sys.argv[0]}: missing --{', --'.join(m.replace('_', '-') for m in missing)}")
    return out
