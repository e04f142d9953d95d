"""One benchmark per GPU at a time: a flock'd slot file per visible GPU, taken before CUDA is used.

This lock, not Snakemake's `gpu` resource, is what keeps two measurements off one GPU: the
resource only caps how many benchmark jobs are in flight. A local run lets one job more per GPU
in flight than there are GPUs (`gpu_lookahead`), which waits here with its client started, so
Snakemake's bookkeeping of each job overlaps the measurement of the one before.

Snakemake's `--resources gpu=N` caps how many benchmark jobs run at once but assigns no device
(snakemake#281); a job takes whichever slot is free. Lock names use the
physical GPU id (from CUDA_VISIBLE_DEVICES when set, as SLURM's gres does), so jobs of different
allocations on one node never share a lock for different GPUs.
"""
from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List


def visible_gpus() -> List[str]:
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd not in (None, ""):
        return [x.strip() for x in cvd.split(",") if x.strip() and x.strip() != "-1"]
    n = len(list(Path("/dev").glob("nvidia[0-9]*")))
    return [str(i) for i in range(max(n, 1))]


def slot_dir() -> Path:
    d = Path(os.environ.get("FIB_GPU_SLOT_DIR", f"/tmp/fib-gpu-slots-{os.getuid()}"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@contextmanager
def gpu_slot(poll_s: float = 0.005) -> Iterator[str]:
    """Hold a free GPU's lock for the block; yields the device string 'cuda:<index>'.

    A job that finds every GPU busy waits here, at the door: with one GPU in a blocking lock
    (handed over the moment the measuring job lets go), with several by polling each."""
    gpus = visible_gpus()
    d = slot_dir()
    while True:
        for index, phys in enumerate(gpus):
            f = open(d / f"gpu-{phys}.lock", "a+")
            try:
                fcntl.flock(f, fcntl.LOCK_EX if len(gpus) == 1 else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.close()
                continue
            try:
                yield f"cuda:{index}"
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
                f.close()
            return
        time.sleep(poll_s)
