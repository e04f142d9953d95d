"""Confinement of a build child: the solution's code runs here too (the entry module's body at
import, a Triton warm-up), so it gets the runner's limits before any of it runs (issue 15).

Writes only the build's own directory (sources, staging, caches, the result), reads the system,
Python and the toolchain; no sockets, ptrace, namespaces or mounts (seccomp); no core files; HOME
and TMPDIR inside the build directory; orphans come back to this process (subreaper) and every
process the build started is killed when it ends. On a GPU machine CUDA is initialised first
(Landlock before CUDA init broke the driver on the H100 machine, see bench/confine.py).
"""
from __future__ import annotations

import os
import resource
import signal
import time
from pathlib import Path
from typing import Any, Dict, List

from ..sandbox import landlock as ll
from ..sandbox import ns, seccomp
from ..sandbox.policy import Settings, build_ruleset


def confine_build(work_dir: Path) -> Dict[str, Any]:
    """Confine this (build child) process to `work_dir`; returns what was applied."""
    work_dir = Path(work_dir)
    layers: List[str] = []
    notes: Dict[str, Any] = {}
    if not Settings.from_env().enabled:
        return {"sandbox": "none", "notes": {"disabled": "FIB_SANDBOX=off"}}
    for k, sub in (("HOME", "home"), ("TMPDIR", "tmp"), ("XDG_CACHE_HOME", "xdg_cache"), ("TORCH_EXTENSIONS_DIR", "torch_ext")):
        (work_dir / sub).mkdir(parents=True, exist_ok=True)
        os.environ[k] = str(work_dir / sub)
    import tempfile

    tempfile.tempdir = None
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
    try:
        ns.set_subreaper()
        layers.append("subreaper")
    except OSError as e:
        notes["subreaper"] = e.strerror
    if _gpu_visible():
        notes["cuda_init"] = _init_cuda()
    if ll.abi_version() > 0:
        try:
            build_ruleset(work_dir, [], None, shm=False).apply()
            layers.append("landlock")
        except OSError as e:
            notes["landlock"] = f"failed: {e}"
    else:
        notes["landlock"] = "unavailable"
    if seccomp.available():
        try:
            seccomp.install()
            layers.append("seccomp")
        except OSError as e:
            notes["seccomp"] = f"failed: {e}"
    return {"sandbox": "+".join(layers) or "none", "notes": notes}


def _gpu_visible() -> bool:
    return os.environ.get("CUDA_VISIBLE_DEVICES", None) != "" and any(Path("/dev").glob("nvidia[0-9]*"))


def _init_cuda() -> str:
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.init()
            return "initialised before Landlock"
        return "no CUDA device"
    except (ImportError, RuntimeError) as e:
        return f"failed: {e}"


def _children(pid: int) -> List[int]:
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(p.name))
    return out


def kill_leftovers(rounds: int = 20) -> int:
    """SIGKILL every process the build left (they are our children: we are their subreaper)."""
    me = os.getpid()
    killed = 0
    for _ in range(rounds):
        kids = _children(me)
        if not kids:
            break
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(0.01)
    return killed
