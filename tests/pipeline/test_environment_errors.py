"""Issue 17: an unwritable worker, cache or results directory is the machine's problem: one clear
message naming the directory and what to set, a non-zero exit (4), nothing run and nothing
written into the dataset; the Python API raises the same message before it evaluates anything."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flashinfer_bench import Benchmark, BenchmarkConfig, TraceSet

from .harness import write_dataset


def _readonly_dir(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    d.chmod(0o500)
    if os.access(d, os.W_OK):  # root ignores permission bits: a path under a regular file instead
        d.chmod(0o700)
        blocker = tmp_path / f"{name}-file"
        blocker.write_text("not a directory\n")
        return blocker / "sub"
    return d


@pytest.mark.parametrize("which", ["FIB_WORKER_DIR", "FIB_CACHE_PATH", "--results"])
def test_unwritable_directories_stop_the_run_with_one_message(tmp_path: Path, which: str) -> None:
    ds = write_dataset(tmp_path, batches=(1,))
    bad = _readonly_dir(tmp_path, "ro")
    env = {**os.environ, "FIB_CACHE_PATH": str(tmp_path / "cache"), "FIB_WORKER_DIR": str(tmp_path / "w")}
    args = ["--results", str(tmp_path / "results")]
    if which == "--results":
        args = ["--results", str(bad)]
    else:
        env[which] = str(bad)
    p = subprocess.run([sys.executable, "-m", "flashinfer_bench", "run", "--local", str(ds), "--device", "cpu", *args],
                       capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert p.returncode == 4, p.stderr[-2000:]
    lines = [x for x in p.stderr.splitlines() if "environment error" in x]
    assert len(lines) == 1 and str(bad) in lines[0] and "not writable" in lines[0], p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    assert not (ds / "traces").exists() or not any((ds / "traces").rglob("*.jsonl"))


def test_benchmark_refuses_an_unwritable_worker_directory(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path, batches=(1,))
    bad = _readonly_dir(tmp_path, "ro")
    with pytest.raises(OSError, match="the worker directory .* is not writable .*FIB_WORKER_DIR"):
        Benchmark(TraceSet.from_path(ds), BenchmarkConfig(device="cpu", worker_dir=str(bad), cache_dir=str(tmp_path / "c")))


def test_an_unwritable_home_is_no_traceback(tmp_path: Path) -> None:
    # Snakemake keeps a source cache under ~/.cache: with HOME unwritable it ended in a traceback
    ds = write_dataset(tmp_path, batches=(1,))
    env = {**os.environ, "HOME": str(_readonly_dir(tmp_path, "home")), "FIB_WORKER_DIR": str(tmp_path / "w")}
    env.pop("XDG_CACHE_HOME", None)
    env.pop("FIB_CACHE_PATH", None)
    p = subprocess.run([sys.executable, "-m", "flashinfer_bench", "run", "--local", str(ds), "--device", "cpu",
                        "--results", str(tmp_path / "results")],
                       capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Traceback" not in p.stderr and "is not writable; caches go to" in p.stderr
    assert any((ds / "traces").rglob("*.jsonl"))
