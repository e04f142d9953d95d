"""The seeds' Benchmark API over a dataset directory."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from flashinfer_bench import Benchmark, BenchmarkConfig, TraceSet
from flashinfer_bench.data import Trace

from .conftest import GOOD_DPS, GOOD_VR, make_solution, rms_definition, rms_workload


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    d = rms_definition(name="rmsnorm_bench_api")
    ts = TraceSet()
    ts.add_definition(d)
    ts.add_solution(make_solution("api_vr", GOOD_VR, d))
    ts.add_solution(make_solution("api_dps", GOOD_DPS, d, dps=True))
    for b in (4, 16):
        ts.add_workload(rms_workload(b, uuid=f"api_b{b}"), definition=d.name)
    ts.to_path(tmp_path / "ds")
    return tmp_path / "ds"


def _config(cpu_config) -> BenchmarkConfig:
    return BenchmarkConfig(
        device="cpu", warmup_runs=2, iterations=8, max_time_s=0.02,
        worker_dir=cpu_config.worker_dir, cache_dir=cpu_config.cache_dir,
    )


def test_run_all_returns_adds_and_merges(dataset: Path, cpu_config) -> None:
    ts = TraceSet.from_path(dataset)
    bench = Benchmark(ts, _config(cpu_config))
    new = bench.run_all()
    assert len(new) == 4 and all(isinstance(t, Trace) for t in new)
    assert {t.evaluation.status.value for t in new} == {"PASSED"}, [t.evaluation.log for t in new]
    assert len(ts.traces_for("rmsnorm_bench_api")) == 4
    path = dataset / "traces" / "rmsnorm" / "rmsnorm_bench_api.jsonl"
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(x)["evaluation"]["status"] == "PASSED" for x in lines)
    # a resumed run evaluates nothing new; a rerun replaces its own results (same solution,
    # workload and hardware: the workflow's merge rule) and keeps every other line as it was
    assert Benchmark(ts, _config(cpu_config)).run_all(resume=True) == []
    ts2 = TraceSet.from_path(dataset)
    Benchmark(ts2, _config(cpu_config).model_copy(update={"solutions": ["api_vr"]})).run_all()
    after = path.read_text().splitlines()
    assert len(after) == 4 and after[:2] == [x for x in lines if json.loads(x)["solution"] == "api_dps"]
    assert [json.loads(x)["solution"] for x in after[2:]] == ["api_vr", "api_vr"] and not set(after[2:]) & set(lines)
    assert len(ts2.traces_for("rmsnorm_bench_api")) == 4
    for t in new:
        print(f"{t.solution} {t.workload.uuid}: {t.evaluation.speedup_factor:.2f}x, max rel {t.evaluation.max_relative_error:.1e}")


def test_run_solution_and_selection(dataset: Path, cpu_config) -> None:
    ts = TraceSet.from_path(dataset)
    out = Benchmark(ts, _config(cpu_config)).run_solution("api_vr", workloads=ts.workloads_for("rmsnorm_bench_api")[:1])
    assert len(out) == 1 and out[0].solution == "api_vr" and out[0].evaluation.status.value == "PASSED"
    cfg = _config(cpu_config).model_copy(update={"definitions": ["nope"]})
    assert Benchmark(ts, cfg).run_all(dump_traces=False) == []


def test_example04_without_config_or_workloads(tmp_path: Path) -> None:
    ts = TraceSet()
    d = rms_definition(name="fused_like")
    ts.add_definition(d)
    ts.add_solution(make_solution("only_solution", GOOD_VR, d))
    ts.save(tmp_path / "custom_kernels.json")
    loaded = TraceSet.load(tmp_path / "custom_kernels.json")
    results = Benchmark(loaded).run_all()
    assert results == []
    assert not (tmp_path / "traces").exists()


def test_unknown_config_fields_are_refused() -> None:
    with pytest.raises(ValueError):
        BenchmarkConfig(warmup_runs=5, iterations=20, not_a_setting=1)
    c = BenchmarkConfig(warmup_runs=5, iterations=20, timeout_seconds=30, use_isolated_runner=True)
    e = c.to_eval_config()
    assert (e.warmup_runs, e.iterations, e.timeout_s) == (5, 20, 30)


def test_run_all_never_saves_a_datasets_failure_as_a_trace(tmp_path: Path, cpu_config) -> None:
    # the definition's reference raises: the dataset's error, the same rule as the pipeline's
    d = rms_definition(name="rmsnorm_broken_ref")
    d = d.model_copy(update={"reference": "def run(x, weight, eps):\n    raise ValueError('reference bug')\n"})
    ts = TraceSet()
    ts.add_definition(d)
    ts.add_solution(make_solution("broken_vr", GOOD_VR, d))
    ts.add_workload(rms_workload(4, uuid="broken_b4"), definition=d.name)
    ts.to_path(tmp_path / "ds")
    ts = TraceSet.from_path(tmp_path / "ds")
    bench = Benchmark(ts, _config(cpu_config))
    assert bench.run_all() == []
    assert len(bench.charged_failures) == 1
    assert "dataset error (not the solution's)" in bench.charged_failures[0].evaluation.log
    assert "reference bug" in bench.charged_failures[0].evaluation.log
    saved = [line for f in (tmp_path / "ds" / "traces").rglob("*.jsonl") for line in f.read_text().splitlines() if line.strip()]
    assert saved == []


def test_run_all_does_not_run_a_solution_validate_rejects(dataset: Path, cpu_config) -> None:
    """A solution with a syntax error is the dataset's error, named with its file and field as
    `validate` and the pipeline's plan name it; run_all makes no COMPILE_ERROR trace for it and
    still runs the good solution (issue 17)."""
    sol_file = next((dataset / "solutions").rglob("api_dps.json"))
    sol = json.loads(sol_file.read_text())
    sol["sources"][0]["content"] = "def run(x, weight, eps, out)\n    return x\n"
    sol_file.write_text(json.dumps(sol))
    bench = Benchmark(TraceSet.from_path(dataset), _config(cpu_config))
    new = bench.run_all()
    assert {(t.solution, t.evaluation.status.value) for t in new} == {("api_vr", "PASSED")}
    assert [(p.path, p.field) for p in bench.problems] == [(str(sol_file), "sources[0].content")]
    assert "syntax error" in bench.problems[0].message
    with pytest.raises(ValueError, match="syntax error"):
        bench.run_solution("api_dps")


def test_a_trace_names_the_version_it_measured_and_an_edit_makes_it_stale(dataset: Path, cpu_config) -> None:
    """Each trace records its solution's content hash; after the solution's file is edited (not
    re-run), its traces are stale: kept and shown, never ranked (TraceSet's best, the report's
    best table), while the other solution's stay current."""
    from flashinfer_bench.report import best_table, traces_frame

    ts = TraceSet.from_path(dataset)
    new = Benchmark(ts, _config(cpu_config)).run_all()
    assert {t.evaluation.status.value for t in new} == {"PASSED"}, [t.evaluation.log for t in new]
    for t in new:
        env = t.evaluation.environment.model_dump()
        assert env["solution_hash"] == ts.get_solution(t.solution).content_hash()
        assert not ts.is_stale(t)
    # the user edits api_vr (a comment is enough: its content is another version now)
    sol_file = next(dataset.glob("solutions/**/api_vr.json"))
    sol = json.loads(sol_file.read_text())
    sol["sources"][0]["content"] += "\n# tuned\n"
    sol_file.write_text(json.dumps(sol))
    edited = TraceSet.from_path(dataset)
    stale = {t.solution: edited.is_stale(t) for t in edited.traces_for("rmsnorm_bench_api")}
    assert stale == {"api_vr": True, "api_dps": False}
    for wl in ("api_b4", "api_b16"):
        assert edited.best_trace("rmsnorm_bench_api", wl).solution == "api_dps"
    df = traces_frame(edited)
    assert set(df[df["stale"]]["solution"]) == {"api_vr"}
    best = best_table(df)
    assert set(best["winner"]) == {"api_dps"}, best[["winner", "flags"]]
