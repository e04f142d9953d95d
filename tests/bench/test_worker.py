"""The worker through its public client: trace contents, caches, compile results, start and exit."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from flashinfer_bench.bench.client import evaluate_via_worker, ping_worker, shutdown_worker, worker_paths
from flashinfer_bench.bench.config import EvalConfig
from flashinfer_bench.data import Trace

from .conftest import GOOD_DPS, GOOD_VR, make_solution, rms_workload

EXTRA_KEYS = {
    "seed", "num_trials", "timer", "samples", "latency_ms_p10", "latency_ms_p90", "iqr_ms", "rel_iqr", "noisy",
    "reference_iqr_ms", "reference_samples", "bytes", "flops", "achieved_gbps", "peak_gbps", "peak_tflops",
    "pct_of_peak_bw", "suspect", "flags", "rtol", "atol", "harness_version", "eval_seconds",
}
ENV_KEYS = {"hardware", "libs", "device", "device_index", "hostname", "seed", "start_time", "end_time", "worker_pid"}


def test_passed_trace_through_compile_has_the_contract_fields(rms_def, compile_build, cpu_config) -> None:
    sol = make_solution("good_dps_compiled", GOOD_DPS, rms_def, dps=True)
    b = compile_build(sol, rms_def)
    assert b["status"] == "OK", b
    t = evaluate_via_worker(rms_def, sol, rms_workload(32), b, cpu_config)
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log
    extra = ev.correctness.extra
    assert EXTRA_KEYS <= set(extra), EXTRA_KEYS - set(extra)
    assert extra["timer"] == "host" and extra["samples"] >= cpu_config.iterations
    assert extra["bytes"] == 32 * 256 * 2 * 2 + 256 * 2
    # information only (a noisy CPU): none of them marks the trace suspect
    assert extra["flags"] == [] or set(extra["flags"]) <= {"noisy", "no_faster_than_reference", "speedup_within_noise"}
    env = json.loads(t.model_dump_json())["evaluation"]["environment"]
    assert ENV_KEYS <= set(env), ENV_KEYS - set(env)
    assert env["hardware"].startswith("CPU") and env["device"] == "cpu"
    assert {"torch", "flashinfer_bench"} <= set(env["libs"])
    assert ev.performance.latency_ms > 0 and ev.performance.reference_latency_ms > 0
    assert ev.performance.speedup_factor == ev.performance.reference_latency_ms / ev.performance.latency_ms
    # the trace is plain data that loads back
    assert Trace.model_validate_json(t.model_dump_json()) == t


def test_worker_is_reused_and_caches_the_reference(rms_def, build, cpu_config) -> None:
    # a converged, quiet reference timing is reused by the next solution; a noisy one (rel. IQR
    # above 10%, common on a loaded CPU) is measured again (issue 17)
    cfg = cpu_config.model_copy(update={"target_rel_ci": 0.5, "iterations": 30})
    wl = rms_workload(24, uuid="cache_check")
    a = make_solution("vr_a", GOOD_VR, rms_def)
    b = make_solution("vr_b", GOOD_VR + "\n# another solution\n", rms_def)
    ta = evaluate_via_worker(rms_def, a, wl, build(a, rms_def), cfg)
    pid = ping_worker("cpu", cpu_config)["pid"]
    tb = evaluate_via_worker(rms_def, b, wl, build(b, rms_def), cfg)
    assert ping_worker("cpu", cpu_config)["pid"] == pid
    ea, eb = ta.evaluation.correctness.extra, tb.evaluation.correctness.extra
    assert ea["reference_cached"] is False
    reusable = ea["reference_converged"] and not ea["reference_noisy"]
    assert eb["reference_cached"] is reusable
    if reusable:
        assert ta.evaluation.performance.reference_latency_ms == tb.evaluation.performance.reference_latency_ms
    assert ta.evaluation.environment.model_dump()["seed"] == tb.evaluation.environment.model_dump()["seed"]


def test_explicit_seed_is_recorded(rms_def, build, cpu_config) -> None:
    sol = make_solution("vr_seeded", GOOD_VR, rms_def)
    t = evaluate_via_worker(rms_def, sol, rms_workload(8), build(sol, rms_def), cpu_config.model_copy(update={"seed": 1234}))
    assert t.evaluation.correctness.extra["seed"] == 1234


def test_failed_builds_become_traces_without_running(rms_def, compile_build, cpu_config) -> None:
    broken = make_solution("syntax_error", "def run(x, weight, eps)\n    return x\n", rms_def)
    b = compile_build(broken, rms_def)
    assert b["status"] == "COMPILE_ERROR"
    t = evaluate_via_worker(rms_def, broken, rms_workload(8), b, cpu_config)
    assert t.evaluation.status.value == "COMPILE_ERROR"
    assert "SyntaxError" in t.evaluation.log or "syntax" in t.evaluation.log.lower()
    skipped = {"status": "SKIPPED", "hash": "x", "log": "needs a GPU"}
    t2 = evaluate_via_worker(rms_def, broken, rms_workload(8), skipped, cpu_config)
    assert t2.evaluation.status.value == "RUNTIME_ERROR" and "needs a GPU" in t2.evaluation.log


def test_concurrent_clients_start_one_worker_which_exits_when_idle(tmp_path: Path) -> None:
    cfg = EvalConfig(device="cpu", worker_dir=str(tmp_path / "w"), cache_dir=str(tmp_path / "c"), idle_timeout_s=2.0)
    pids = []

    def go() -> None:
        r = ping_worker("cpu", cfg, spawn=True)
        pids.append(r and r["pid"])

    ts = [threading.Thread(target=go) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(set(pids)) == 1 and pids[0], pids
    sock = worker_paths("cpu", tmp_path / "w")["socket"]
    assert sock.exists()
    deadline = time.monotonic() + 30
    while sock.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not sock.exists(), "an idle worker must exit and remove its socket"
    assert ping_worker("cpu", cfg) is None
    assert shutdown_worker("cpu", cfg) is False


def test_workers_are_per_physical_gpu(monkeypatch, tmp_path: Path) -> None:
    from flashinfer_bench.bench.client import WorkerUnavailable, device_slug, physical_gpu

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert physical_gpu("cuda:1") == ("5", 5) and device_slug("cuda:0") == "gpu3"
    a = worker_paths("cuda:0", tmp_path)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5")
    b = worker_paths("cuda:0", tmp_path)
    assert a["socket"] != b["socket"], "two jobs that each see another GPU as cuda:0 use two workers"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert worker_paths("cuda:0", tmp_path)["socket"] == a["socket"]
    with pytest.raises(WorkerUnavailable):
        physical_gpu("cuda:1")
