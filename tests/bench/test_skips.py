"""One set of rules behind both doors (issue 16): the pipeline's config.yaml defaults are the
ones `BenchmarkConfig` starts from, and `Benchmark.run_all()` skips what the plan skips."""
from __future__ import annotations

from pathlib import Path

import yaml

from flashinfer_bench import Benchmark, BenchmarkConfig, TraceSet
from flashinfer_bench.bench.config import CPU_EVALUATION, DEFAULT_EVALUATION
from flashinfer_bench.bench.skips import DEFAULT_CPU_LIMITS
from flashinfer_bench.pipeline.plan import build_plan

from .conftest import GOOD_VR, make_solution, rms_definition, rms_workload

REPO = Path(__file__).resolve().parents[2]


def test_pipeline_defaults_are_the_apis() -> None:
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    assert {k: cfg["evaluation"][k] for k in DEFAULT_EVALUATION} == DEFAULT_EVALUATION
    assert {k: cfg["cpu"]["evaluation"][k] for k in CPU_EVALUATION} == CPU_EVALUATION
    assert {k: cfg["cpu"][k] for k in DEFAULT_CPU_LIMITS} == DEFAULT_CPU_LIMITS
    bc = BenchmarkConfig(device="cpu")
    e = bc.to_eval_config("cpu")
    assert (e.iterations, e.num_trials, e.max_time_s) == (5, 2, 0.5)
    e = BenchmarkConfig(device="cuda", iterations=7).to_eval_config("cuda")
    assert (e.iterations, e.warmup_runs, e.max_time_s) == (7, 10, 0.35)


def test_run_all_skips_what_the_plan_skips(tmp_path: Path, cpu_config) -> None:
    d = rms_definition(name="rmsnorm_skips")
    ts = TraceSet()
    ts.add_definition(d)
    ts.add_solution(make_solution("skips_vr", GOOD_VR, d))
    cuda = make_solution("skips_cuda", GOOD_VR, d).model_copy(deep=True)
    cuda.spec.language = type(cuda.spec.language)("cuda")
    ts.add_solution(cuda)
    for b in (4, 40000):  # 40000 x 256 elements: above cpu.max_elements
        ts.add_workload(rms_workload(b, uuid=f"skips_b{b}"), definition=d.name)
    ts.to_path(tmp_path / "ds")
    plan = build_plan(tmp_path / "ds", "cpu", cpu_limits=DEFAULT_CPU_LIMITS)
    planned = {(s.solution, s.workload) for s in plan.skipped}
    bench = Benchmark(TraceSet.from_path(tmp_path / "ds"), BenchmarkConfig(
        device="cpu", worker_dir=cpu_config.worker_dir, cache_dir=cpu_config.cache_dir, max_time_s=0.02, iterations=5))
    new = bench.run_all()
    assert {(s, w) for _, s, w, _ in bench.skipped} == planned
    assert {(t.solution, t.workload.uuid) for t in new} == {("skips_vr", "skips_b4")}
    assert new[0].evaluation.status.value == "PASSED", new[0].evaluation.log


def test_a_missing_optional_toolchain_is_skipped_with_its_install_hint(tmp_path: Path) -> None:
    # issue 17: the shipped TileLang solution was COMPILE_ERROR "tilelang is not installed" on
    # every fresh set-up; it is SKIPPED, with how to install it, by the plan and by the build
    import importlib.util

    import pytest

    if importlib.util.find_spec("tilelang") is not None:
        pytest.skip("tilelang is installed here")
    plan = build_plan(REPO / "dataset", "cpu")
    tl = [s for s in plan.skipped if "tilelang" in s.solution]
    assert tl and all("tilelang is not installed here: pip install" in s.reason for s in tl)
    assert not [j for j in plan.jobs if "tilelang" in j.solution]
    from flashinfer_bench.compile import build as compile_solution
    from flashinfer_bench.data import TraceSet as TS

    ts = TS.from_path(REPO / "dataset")
    sol = next(s for sols in ts.solutions.values() for s in sols if s.spec.language.value == "tilelang")
    r = compile_solution(sol, ts.definitions[sol.definition], cache_dir=tmp_path / "cache")
    assert r.status == "SKIPPED" and "pip install" in r.log, (r.status, r.log)
