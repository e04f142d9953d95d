"""Start the per-GPU workers when a local GPU run starts, so that their start-up (torch import,
CUDA init, timing calibration: ~4 s) overlaps the compile jobs instead of delaying the first
benchmark job.

The Snakefile's `onstart:` calls `prestart_workers` (the main Snakemake process, after the DAG is
built, never in a dry run): it spawns this module detached and returns at once. The detached
process asks each visible GPU's worker to warm up, exactly as the first benchmark job would
(same socket, worker directory and cache directory), and exits; a benchmark job that arrives
meanwhile waits for the same runner. Nothing happens on the CPU, in dry runs, or when the jobs
run elsewhere (SLURM: `workflow.local_exec` is false, and profiles/slurm sets
`prestart_worker: false`).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Optional


def should_prestart(config: dict, device: str, local_exec: bool, dryrun: bool) -> bool:
    return bool(config.get("prestart_worker", True)) and device.startswith("cuda") and local_exec and not dryrun


def prestart_workers(device: str, cache_dir: str = "", log_dir: Optional[str] = None) -> Optional[subprocess.Popen]:
    """Spawn the detached warm-up of every visible GPU's worker; None when there is nothing to do."""
    if not device.startswith("cuda"):
        return None
    cmd = [sys.executable, "-m", "flashinfer_bench.pipeline.prestart", "--device", device]
    if cache_dir:
        cmd += ["--cache-dir", cache_dir]
    out = subprocess.DEVNULL
    if log_dir:
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        out = open(Path(log_dir) / "prestart-workers.log", "ab")
    pkg_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (pkg_root, os.environ.get("PYTHONPATH")) if p)}
    try:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, env=env)
    except OSError as e:  # a failed pre-start only costs the overlap; the first job starts the worker
        print(f"[flashinfer-bench] could not pre-start the GPU workers: {e}", file=sys.stderr)
        return None
    finally:
        if out is not subprocess.DEVNULL:
            out.close()


def _devices(device: str) -> list:
    """Every visible GPU: a benchmark job takes whichever GPU slot is free (gpu_slots), so any
    of them may get the first job. ('cpu' only for testing the warm-up by hand.)"""
    from .gpu_slots import visible_gpus

    if not device.startswith("cuda"):
        return [device]
    return [f"cuda:{i}" for i in range(len(visible_gpus()))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", required=True)
    ap.add_argument("--cache-dir", default="")
    a = ap.parse_args()
    from flashinfer_bench.bench.client import warm_worker
    from flashinfer_bench.bench.config import EvalConfig

    from .jobs import _worker_dir

    config = EvalConfig(worker_dir=str(_worker_dir()), cache_dir=a.cache_dir or None)
    results = {}

    def warm(dev: str) -> None:
        results[dev] = warm_worker(dev, config) is not None

    threads = [threading.Thread(target=warm, args=(d,)) for d in _devices(a.device)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for dev, ok in sorted(results.items()):
        print(f"pre-start of the worker for {dev}: {'warm' if ok else 'failed (the first benchmark job retries)'}")
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
