"""The real pipeline through SLURM (issue 7): the example dataset's CPU run submitted with
`--profile profiles/slurm` produces the same set of traces as a local run, and its jobs really
went through sbatch. Needs .ci/slurm-up.sh and FIB_TEST_SLURM=1 (CI sets both)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from flashinfer_bench.data import TraceSet
from tests.pipeline.harness import REPO, SHARED_WORKERS, run_pipeline
from tests.slurm_toy.runner import run_snakemake_slurm
from tests.test_slurm_cluster import slurm_cluster  # noqa: F401  (the cluster fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

# a slice of the example dataset that runs in about a minute on a 2-core CPU
SELECT = {"definitions": ["rmsnorm_d4096"], "solutions": ["rmsnorm_torch", "rmsnorm_triton", "rmsnorm_cuda"]}
CPU_EVAL = {"warmup_runs": 1, "iterations": 3, "num_trials": 1, "max_time_s": 0.05, "timeout_s": 120}


def _dataset(root: Path) -> Path:
    ds = root / "dataset"
    shutil.copytree(REPO / "dataset", ds, ignore=shutil.ignore_patterns("traces"))
    return ds


def _keys(ds: Path):
    ts = TraceSet.from_path(ds)
    assert not ts.errors, ts.errors
    return {(t.solution, t.workload.uuid, t.evaluation.status.value) for t in ts.traces_for("rmsnorm_d4096")}


def test_example_pipeline_through_slurm_matches_local(slurm_cluster, tmp_path):
    local = tmp_path / "local"
    _dataset(local)
    r = run_pipeline(local, config={**SELECT, "cpu": {"evaluation": CPU_EVAL}})
    assert r.rc == 0, r.output[-3000:]
    want = _keys(local / "dataset")
    assert want and {s for s, _, _ in want} == {"rmsnorm_torch", "rmsnorm_triton"}

    work = tmp_path / "slurm"
    ds = _dataset(work)
    cfg = work / "cfg.json"
    cfg.write_text(json.dumps({"dataset": str(ds), "results": "results", "device": "cpu",
                               "cache_dir": str(work / "cache"), **SELECT, "cpu": {"evaluation": CPU_EVAL}}))
    env = {**os.environ, "FIB_CACHE_PATH": str(work / "cache"), "FIB_WORKER_DIR": str(SHARED_WORKERS),
           "FIB_SLURM_BENCH_GROUP": "20"}
    run = run_snakemake_slurm(REPO / "Snakefile", work, ["--configfile", str(cfg)], env=env, timeout=900)
    assert run.returncode == 0 and not run.timed_out, run.log[-4000:]
    assert run.job_ids, "no job was submitted with sbatch"
    jobs = run.jobs()
    assert all(j["state"] == "COMPLETED" for j in jobs), jobs
    assert any(j["partition"] == "gpu" for j in jobs), jobs  # the benchmark group asked for a GPU
    assert _keys(ds) == want
    # the CUDA solution was compiled (on the cluster) and listed as needing a GPU, not run
    assert "needs a GPU" in (work / "results/report/summary.txt").read_text()
    assert not run.left_active
