"""The GPU slot lock: whatever Snakemake lets run, one measurement per GPU at a time."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

HOLDER = (
    "import sys, time\n"
    f"sys.path.insert(0, {str(REPO)!r})\n"
    "from flashinfer_bench.pipeline.gpu_slots import gpu_slot\n"
    "with gpu_slot() as dev:\n"
    "    print('got', dev, time.time(), flush=True)\n"
    "    time.sleep(float(sys.argv[1]))\n"
    "    print('release', time.time(), flush=True)\n"
)


def _start(hold_s: float, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(hold_s)], stdout=subprocess.PIPE, text=True, env=env)


def test_a_job_waiting_at_a_busy_gpu_gets_it_as_soon_as_it_is_released(tmp_path) -> None:
    env = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "3", "FIB_GPU_SLOT_DIR": str(tmp_path)}
    first = _start(0.8, env)
    assert first.stdout.readline().startswith("got cuda:0")
    second = _start(0.0, env)  # the look-ahead job: started while the GPU is busy
    got_first = first.stdout.read().split()
    got_second = second.stdout.read().split()
    assert first.wait() == 0 and second.wait() == 0
    released = float(got_first[got_first.index("release") + 1])
    acquired = float(got_second[got_second.index("got") + 2])
    assert got_second[1] == "cuda:0"
    assert acquired >= released  # never two holders on one GPU
    assert acquired - released < 0.2  # handed over at once, not on a poll tick


def test_with_two_gpus_two_jobs_measure_at_once_on_different_gpus(tmp_path) -> None:
    env = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "2,5", "FIB_GPU_SLOT_DIR": str(tmp_path)}
    a, b = _start(0.5, env), _start(0.5, env)
    devs = {a.stdout.readline().split()[1], b.stdout.readline().split()[1]}
    assert devs == {"cuda:0", "cuda:1"}
    a.wait(), b.wait()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpu-2.lock", "gpu-5.lock"]  # physical ids
