"""Results are never lost: foreign traces survive aggregation, and a killed run leaves the
dataset loadable and the next run completes the work."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flashinfer_bench.data import TraceSet

from .harness import REPO, SHARED_WORKERS, run_pipeline, write_dataset

pytestmark = pytest.mark.slow

FOREIGN = {
    "definition": "rms_h256",
    "workload": {"uuid": "rms_h256_b1", "axes": {"batch_size": 1}, "inputs": {}},
    "solution": "torch_value",
    "evaluation": {"status": "PASSED", "environment": {"hardware": "NVIDIA H200", "libs": {}},
                   "timestamp": "2026-01-01T00:00:00Z", "log": "",
                   "correctness": {"max_relative_error": 0.0, "max_absolute_error": 0.0},
                   "performance": {"latency_ms": 0.003, "reference_latency_ms": 0.01, "speedup_factor": 3.3}},
}
GONE = dict(FOREIGN, solution="a_solution_that_was_deleted",
            evaluation=dict(FOREIGN["evaluation"], environment={"hardware": "CPU gone", "libs": {}}))


def test_aggregation_keeps_foreign_traces(tmp_path):
    ds = write_dataset(tmp_path, batches=(1, 4))
    tfile = ds / "traces/rmsnorm/rms_h256.jsonl"
    tfile.parent.mkdir(parents=True)
    garbage = '{"this line": "is not a trace"'
    tfile.write_text(json.dumps(FOREIGN) + "\n" + json.dumps(GONE) + "\n" + garbage + "\n")
    r = run_pipeline(tmp_path)
    assert r.rc == 0, r.output[-3000:]
    lines = tfile.read_text().splitlines()
    assert json.dumps(FOREIGN) in lines and json.dumps(GONE) in lines and garbage in lines
    ts = TraceSet.from_path(ds)
    mine = [t for t in ts.traces_for("rms_h256") if t.evaluation.environment.hardware.startswith("CPU")
            and t.solution in ("torch_value", "torch_dps")]
    assert len(mine) == 4
    # a second run with a changed setting replaces its own traces, not the foreign ones
    r = run_pipeline(tmp_path, config={"cpu": {"evaluation": {"iterations": 4}}})
    assert r.rc == 0
    lines = tfile.read_text().splitlines()
    assert json.dumps(FOREIGN) in lines and json.dumps(GONE) in lines and garbage in lines
    assert len(lines) == 3 + 4


def _start(work: Path, env_extra=None) -> subprocess.Popen:
    cfg = {"dataset": str(work / "dataset"), "results": "results", "device": "cpu", "cache_dir": str(work / "cache"),
           "cpu": {"evaluation": {"warmup_runs": 1, "iterations": 3, "num_trials": 1, "max_time_s": 0.05, "timeout_s": 60}}}
    (work / "cfg.json").write_text(json.dumps(cfg))
    env = {**os.environ, "FIB_CACHE_PATH": str(work / "cache"), "FIB_WORKER_DIR": str(SHARED_WORKERS), **(env_extra or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
         "--cores", "2", "--configfile", str(work / "cfg.json")],
        cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _wait_for(pred, timeout=240):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _kill(p: subprocess.Popen) -> None:
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()


@pytest.mark.parametrize("stage", ["benchmark", "aggregate"])
def test_killed_run_leaves_dataset_loadable_and_next_run_completes(tmp_path, stage):
    ds = write_dataset(tmp_path, batches=(1, 4, 16))
    tfile = ds / "traces/rmsnorm/rms_h256.jsonl"
    tfile.parent.mkdir(parents=True)
    tfile.write_text(json.dumps(FOREIGN) + "\n")
    if stage == "benchmark":
        p = _start(tmp_path)
        assert _wait_for(lambda: len(list((tmp_path / "results/traces").rglob("*.json"))) >= 1)
    else:
        p = _start(tmp_path, {"FIB_TEST_AGGREGATE_PAUSE_S": "30"})
        assert _wait_for(lambda: any((tmp_path / "results/logs/aggregate").rglob("*.log")))
        time.sleep(1.0)
    _kill(p)
    ts = TraceSet.from_path(ds)
    assert not ts.errors, [str(e) for e in ts.errors]
    assert json.dumps(FOREIGN) in tfile.read_text().splitlines()
    # a SIGKILLed Snakemake leaves its directory lock behind; the user (or `flashinfer-bench run`,
    # which does it by itself when no Snakemake process is alive there) unlocks it
    assert run_pipeline(tmp_path, extra=["--unlock"]).rc == 0
    r = run_pipeline(tmp_path)
    assert r.rc == 0, r.output[-3000:]
    ts = TraceSet.from_path(ds)
    assert not ts.errors
    assert len(ts.traces_for("rms_h256")) == 1 + 6
