"""End-to-end: the toy DAG (tests/slurm_toy/Snakefile) through profiles/slurm on a
real SLURM controller.

Runs only with FIB_TEST_SLURM=1 (CI sets it after `.ci/slurm-up.sh`) and when
`sinfo` answers; needs the optional `slurm` extra (snakemake-executor-plugin-slurm).
To run the real pipeline instead, call `run_snakemake_slurm(<Snakefile>, tmp, [...])`.

    bash .ci/slurm-up.sh && FIB_TEST_SLURM=1 .venv/bin/pytest -m slurm tests/test_slurm_cluster.py
    bash .ci/slurm-down.sh
"""
from __future__ import annotations

import os
import sys
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


# The real pipeline's SLURM test (tests/test_slurm_pipeline.py) covers grouping and sbatch; these two
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


def test_toy_dag_grouped(slurm_cluster, tmp_path):
    """Profile defaults: benchmark jobs grouped into one sbatch, run in series on 1 GPU."""
    n_sol, n_wl = 2, 3
    run = _toy(tmp_path, ["--config", f"n_sol={n_sol}", f"n_wl={n_wl}"])
    compiles, benches, jobs = _check_toy_outputs(run, n_sol, n_wl)
    bench_ids = {r["slurm_job_id"] for r in benches}
    assert len(bench_ids) == 1, f"expected one group job for all benchmarks, got {bench_ids}"
    assert len({r["cuda_visible_devices"] for r in benches}) == 1
    (gid,) = bench_ids
    assert jobs[gid]["cpus"] == "1", jobs[gid]          # members not summed: serial layers
    assert len(run.job_ids) == n_sol + 1                # n compiles + 1 group


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
