"""Where a device's worker listens: stdlib only, so the pipeline's thin benchmark client can
compute it in a few milliseconds without importing pydantic or torch (it loads this file by path).
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path
from typing import Dict, Tuple

try:
    from ..measure_lock import measure_lock_path
except ImportError:  # loaded by path (the thin client): measure_lock.py is stdlib-only too
    import importlib.util

    _spec = importlib.util.spec_from_file_location(
        "_fib_measure_lock", Path(__file__).resolve().parent.parent / "measure_lock.py")
    _mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_mod)  # type: ignore[union-attr]
    measure_lock_path = _mod.measure_lock_path

_PKG = Path(__file__).resolve().parent.parent

try:
    from ..fingerprint import EVALUATOR, code_fingerprint
except ImportError:  # loaded by path (the thin client): no package to import from
    import importlib.util

    _spec = importlib.util.spec_from_file_location("_fib_fingerprint", _PKG / "fingerprint.py")
    _fp = sys.modules["_fib_fingerprint"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_fp)  # type: ignore[union-attr]
    EVALUATOR, code_fingerprint = _fp.EVALUATOR, _fp.code_fingerprint


class WorkerUnavailable(RuntimeError):
    pass


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda:0' when an NVIDIA GPU is visible (checked without importing torch), else 'cpu'."""
    d = device.strip().lower()
    if d == "cuda":
        return "cuda:0"
    if d != "auto":
        return d
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None and vis.strip() in ("", "-1"):
        return "cpu"
    gpus = Path("/proc/driver/nvidia/gpus")
    if gpus.is_dir() and any(gpus.iterdir()):
        return "cuda:0"
    return "cpu"


def physical_gpu(device: str) -> Tuple[str, int]:
    """(CUDA_VISIBLE_DEVICES entry, index) of the GPU that `cuda:N` names in this process.

    Jobs that each see one GPU through their own CUDA_VISIBLE_DEVICES all call it cuda:0; the
    worker is per physical GPU, so they never share one by mistake.
    """
    n = int(device.split(":", 1)[1]) if ":" in device else 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible not in (None, ""):
        ids = [x.strip() for x in visible.split(",") if x.strip()]
        if n >= len(ids):
            raise WorkerUnavailable(f"{device} is not among CUDA_VISIBLE_DEVICES={visible}")
        phys = ids[n]
    else:
        phys = str(n)
    return phys, (int(phys) if phys.isdigit() else n)


def device_slug(device: str) -> str:
    """'cpu', or 'gpu<physical id>' for a CUDA device."""
    if device == "cpu":
        return "cpu"
    phys, _ = physical_gpu(device)
    return "gpu" + re.sub(r"[^a-z0-9]+", "", phys.lower()).removeprefix("gpu")[:24]


def default_worker_dir() -> Path:
    """Where workers live unless FIB_WORKER_DIR says otherwise: node-local (sockets), one set per
    GPU allocation (SLURM jobs sharing a node see different CUDA_VISIBLE_DEVICES and must not
    share a worker started for other GPUs). The pipeline's jobs and the Python API share it."""
    env = os.environ.get("FIB_WORKER_DIR")
    if env:
        return Path(env)
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    suffix = f"-cvd{cvd.replace(',', '_')}" if cvd else ""
    return Path(f"/tmp/fib-workers-{os.getuid()}{suffix}")


def worker_paths(device: str, wdir: Path) -> Dict[str, Path]:
    slug = device_slug(device)
    # named after the code it runs and the Python that runs it: a worker of other code (an edited
    # evaluator) or of another virtual environment never serves this client
    wid = f"{slug}-{code_fingerprint(EVALUATOR, sys.executable)[:12]}"
    sock = wdir / f"{wid}.sock"
    if len(str(sock)) > 100:  # AF_UNIX path limit
        short = hashlib.sha256(str(sock).encode()).hexdigest()[:16]
        sock = Path("/tmp") / f"fib-{os.getuid()}-{short}.sock"
    return {
        "socket": sock, "lock": wdir / f"{wid}.lock", "log": wdir / f"{wid}.log", "id": Path(wid),
        # one measurement at a time on a device, also across worker versions and worker
        # directories (a notebook's Benchmark and a pipeline run used to measure at once)
        "measure_lock": measure_lock_path(slug),
    }


