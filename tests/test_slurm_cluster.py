"""End-to-end through profiles/slurm on a real SLURM controller: the toy DAG
(tests/slurm_toy/Snakefile) and the real pipeline on a slice of the example dataset.

Runs only with FIB_TEST_SLURM=1 (CI sets it after `.ci/slurm-up.sh`) and when
`sinfo` answers; needs the optional `slurm` extra (snakemake-executor-plugin-slurm).
To run the real pipeline instead, call `run_snakemake_slurm(<Snakefile>, tmp, [...])`.

The default runs (the real pipeline through SLURM, its local reference run, the toy DAG grouped)
are started together by one module fixture; each test checks one run's outcome.

    bash .ci/slurm-up.sh && FIB_TEST_SLURM=1 .venv/bin/pytest -m slurm tests/test_slurm_cluster.py
    bash .ci/slurm-down.sh
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from slurm_toy.runner import (  # noqa: E402
    TOY_SNAKEFILE,
    SlurmRun,
    active_jobs,
    parse_probe_file,
    plugin_available,
    run_snakemake_slurm,
    slurm_available,
)

from flashinfer_bench.data import TraceSet  # noqa: E402
from tests.pipeline.harness import REPO, SHARED_WORKERS, run_pipeline  # noqa: E402

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

RUN_TIMEOUT = float(os.environ.get("FIB_SLURM_TEST_TIMEOUT", "600"))


@pytest.fixture(scope="module")
def slurm_cluster():
    if os.environ.get("FIB_TEST_SLURM") != "1":
        pytest.skip("SLURM tests disabled: set FIB_TEST_SLURM=1 after running .ci/slurm-up.sh")
    ok, why = slurm_available()
    if not ok:
        pytest.skip(f"SLURM controller not reachable: {why}")
    ok, why = plugin_available()
    if not ok:
        pytest.skip(why)
    before = set(active_jobs())
    yield
    # nothing this module submitted may still be queued or running
    leaked = set(active_jobs()) - before
    assert not leaked, f"SLURM jobs left active after the tests: {sorted(leaked)}"


# The default runs (the `runs` fixture below) cover grouping and sbatch; these two
# toy checks (distinct GPUs for parallel ungrouped jobs, cleanup after a timeout) add ~2 minutes,
# so they run when FIB_TEST_SLURM_EXTENDED=1.
extended = pytest.mark.skipif(os.environ.get("FIB_TEST_SLURM_EXTENDED") != "1",
                              reason="extended SLURM checks: set FIB_TEST_SLURM_EXTENDED=1")


def _toy(tmp_path: Path, extra=(), env=None, timeout=RUN_TIMEOUT) -> SlurmRun:
    return run_snakemake_slurm(TOY_SNAKEFILE, tmp_path / "wd", list(extra), env=env, timeout=timeout)


def _explain(run: SlurmRun) -> str:
    return f"rc={run.returncode} timed_out={run.timed_out} cmd={' '.join(run.cmd)}\n--- log tail:\n{run.log[-4000:]}"


def _check_toy_outputs(run: SlurmRun, n_sol: int, n_wl: int):
    wd = run.workdir
    assert run.returncode == 0, _explain(run)
    assert run.run_uuid, "no 'SLURM run ID' in the snakemake log: did the slurm executor run?"
    assert run.left_active == [] and active_jobs(run.run_uuid) == []
    submitted = set(run.job_ids)
    assert submitted, _explain(run)

    compiles = [parse_probe_file(wd / f"build/s{i}.artifact")[0] for i in range(n_sol)]
    benches = [parse_probe_file(wd / f"traces/s{i}/w{j}.txt")[0] for i in range(n_sol) for j in range(n_wl)]
    summary = parse_probe_file(wd / "results/summary.txt")
    assert len(summary) == n_sol + n_sol * n_wl + 1

    for row in compiles + benches:
        # every remote job ran inside a SLURM allocation that snakemake submitted
        assert row["slurm_job_id"] in submitted, (row, sorted(submitted))
    for row in compiles:
        assert row["partition"] == "cpu" and row["cuda_visible_devices"] == "unset", row
    for row in benches:
        assert row["partition"] == "gpu", row
        assert row["cuda_visible_devices"] in {"0", "1"}, row   # set by SLURM from gres gpu:1
    # aggregate is a localrule: it ran in the Snakemake process, not under SLURM
    assert summary[-1]["rule"] == "aggregate" and summary[-1]["slurm_job_id"] == "none", summary[-1]

    jobs = {j["id"]: j for j in run.jobs()}
    for jid in submitted:
        assert jobs[jid]["state"] == "COMPLETED", jobs[jid]
    bench_ids = {r["slurm_job_id"] for r in benches}
    for jid in bench_ids:
        assert jobs[jid]["partition"] == "gpu" and "gpu:1" in (jobs[jid]["tres_per_job"] or ""), jobs[jid]
    return compiles, benches, jobs


# a slice of the example dataset: one definition, its Python, Triton and CUDA solutions, and
# three workloads (b1, b8, and b8192 which is above the CPU size limit for Triton and skipped)
SELECT = {"definitions": ["rmsnorm_d4096"], "solutions": ["rmsnorm_torch", "rmsnorm_triton", "rmsnorm_cuda"]}
WORKLOADS = {"rmsnorm_d4096": {"batch_size": [1, 8, 8192]}}
CPU_EVAL = {"warmup_runs": 1, "iterations": 3, "num_trials": 1, "max_time_s": 0.05, "timeout_s": 120}
TOY_GROUPED = {"n_sol": 2, "n_wl": 3}


def _dataset(root: Path) -> Path:
    ds = root / "dataset"
    shutil.copytree(REPO / "dataset", ds, ignore=shutil.ignore_patterns("traces"))
    for name, keep in WORKLOADS.items():
        for f in (ds / "workloads").rglob(f"{name}.jsonl"):
            lines = [ln for ln in f.read_text().splitlines()
                     if ln.strip() and all(json.loads(ln)["workload"]["axes"][k] in v for k, v in keep.items())]
            f.write_text("\n".join(lines) + "\n")
    return ds


def _keys(ds: Path):
    ts = TraceSet.from_path(ds)
    assert not ts.errors, ts.errors
    return {(t.solution, t.workload.uuid, t.evaluation.status.value) for t in ts.traces_for("rmsnorm_d4096")}


def _local_run(local: Path):
    _dataset(local)
    return run_pipeline(local, config={**SELECT, "cpu": {"evaluation": CPU_EVAL}})


def _pipeline_slurm_run(work: Path) -> SlurmRun:
    ds = _dataset(work)
    cfg = work / "cfg.json"
    cfg.write_text(json.dumps({"dataset": str(ds), "results": "results", "device": "cpu",
                               "cache_dir": str(work / "cache"), **SELECT, "cpu": {"evaluation": CPU_EVAL}}))
    env = {**os.environ, "FIB_CACHE_PATH": str(work / "cache"), "FIB_WORKER_DIR": str(SHARED_WORKERS),
           "FIB_SLURM_BENCH_GROUP": "20"}
    return run_snakemake_slurm(REPO / "Snakefile", work, ["--configfile", str(cfg)], env=env, timeout=900)


@pytest.fixture(scope="module")
def runs(slurm_cluster, tmp_path_factory):
    """The default runs, started together: the real pipeline through the profile, the toy DAG with
    the profile's defaults, and the same pipeline run locally as the reference. They spend most of
    their time waiting for SLURM's status polls (whose interval grows by 10 s after every poll that
    sees no finished job), so together they take little more than the longest one alone."""
    root = tmp_path_factory.mktemp("slurm-runs")
    with ThreadPoolExecutor(3) as pool:
        local = pool.submit(_local_run, root / "local")
        pipeline = pool.submit(_pipeline_slurm_run, root / "slurm")
        toy = pool.submit(_toy, root / "toy", ["--config", *(f"{k}={v}" for k, v in TOY_GROUPED.items())])
        return {"local": local.result(), "pipeline": pipeline.result(), "toy": toy.result(),
                "local_ds": root / "local" / "dataset", "slurm_work": root / "slurm"}


def test_toy_dag_grouped(runs):
    """Profile defaults: benchmark jobs grouped into one sbatch, run in series on 1 GPU."""
    n_sol, n_wl = TOY_GROUPED["n_sol"], TOY_GROUPED["n_wl"]
    run = runs["toy"]
    compiles, benches, jobs = _check_toy_outputs(run, n_sol, n_wl)
    bench_ids = {r["slurm_job_id"] for r in benches}
    assert len(bench_ids) == 1, f"expected one group job for all benchmarks, got {bench_ids}"
    assert len({r["cuda_visible_devices"] for r in benches}) == 1
    (gid,) = bench_ids
    assert jobs[gid]["cpus"] == "1", jobs[gid]          # members not summed: serial layers
    assert len(run.job_ids) == n_sol + 1                # n compiles + 1 group


def test_example_pipeline_through_slurm_matches_local(runs):
    """The real pipeline through SLURM (issue 7): the example dataset's CPU run submitted with
    `--profile profiles/slurm` produces the same set of traces as a local run, and its jobs really
    went through sbatch."""
    r = runs["local"]
    assert r.rc == 0, r.output[-3000:]
    want = _keys(runs["local_ds"])
    assert want and {s for s, _, _ in want} == {"rmsnorm_torch", "rmsnorm_triton"}

    run, work = runs["pipeline"], runs["slurm_work"]
    assert run.returncode == 0 and not run.timed_out, run.log[-4000:]
    assert run.job_ids, "no job was submitted with sbatch"
    jobs = run.jobs()
    assert all(j["state"] == "COMPLETED" for j in jobs), jobs
    assert any(j["partition"] == "gpu" for j in jobs), jobs  # the benchmark group asked for a GPU
    assert _keys(work / "dataset") == want
    # the CUDA solution was compiled (on the cluster) and listed as needing a GPU, not run
    assert "needs a GPU" in (work / "results/report/summary.txt").read_text()
    assert not run.left_active


@extended
def test_toy_dag_ungrouped(slurm_cluster, tmp_path):
    """FIB_SLURM_BENCH_GROUP=0: one sbatch per benchmark job; concurrent ones get distinct GPUs."""
    n_sol, n_wl = 1, 4
    run = _toy(tmp_path, ["--config", f"n_sol={n_sol}", f"n_wl={n_wl}", "bench_sleep=2"],
               env={"FIB_SLURM_BENCH_GROUP": "0"})
    compiles, benches, jobs = _check_toy_outputs(run, n_sol, n_wl)
    bench_ids = {r["slurm_job_id"] for r in benches}
    assert len(bench_ids) == n_sol * n_wl
    assert len(run.job_ids) == n_sol + n_sol * n_wl
    # two fake GPUs: jobs that overlapped in time must have had different devices
    spans = [(jobs[r["slurm_job_id"]]["start"], jobs[r["slurm_job_id"]]["end"], r["cuda_visible_devices"])
             for r in benches]
    for i, (s1, e1, d1) in enumerate(spans):
        for s2, e2, d2 in spans[i + 1:]:
            if s1 < e2 and s2 < e1:   # overlap (1 s resolution, strict)
                assert d1 != d2, spans


@extended
def test_timeout_cleans_up(slurm_cluster, tmp_path):
    """A run killed on timeout leaves no SLURM job behind (a SIGTERM'd Snakemake would linger)."""
    run = _toy(tmp_path, ["--config", "n_sol=1", "n_wl=2", "bench_sleep=300"],
               env={"FIB_SLURM_BENCH_GROUP": "0"}, timeout=60)
    assert run.timed_out, _explain(run)
    assert run.run_uuid and run.job_ids, _explain(run)
    assert run.left_active == [], run.left_active
    assert active_jobs(run.run_uuid) == []
    states = {j["id"]: j["state"] for j in run.jobs()}
    assert set(states.values()) <= {"COMPLETED", "CANCELLED"}, states
