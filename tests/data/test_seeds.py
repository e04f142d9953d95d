"""The data-model code of the user's seed documents runs verbatim (read from the markdown)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flashinfer_bench.data import Definition, Evaluation, Solution, Trace, TraceSet, Workload
from flashinfer_bench.data.schema import schema_errors

from .seedcode import block


def _run(code: str, ns: dict) -> dict:
    exec(compile(code, "<seed>", "exec"), ns)
    return ns


@pytest.fixture
def ex02(seeds_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Sections 1-4 of example 02, in order, in one namespace (as the seed's scripts chain them)."""
    md = seeds_dir / "example-02-trace-schema.md"
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "triton_rmsnorm.py").write_text(block(md, "Triton (`kernels/triton_rmsnorm.py`)"))
    monkeypatch.chdir(tmp_path)  # section 2 opens kernels/triton_rmsnorm.py relative to the cwd
    ns: dict = {}
    for section in ("1. Definition Schema", "2. Solution Schema", "3. Workload Schema", "4. Trace Schema"):
        _run(block(md, section), ns)
    return ns


def test_example02_definition(ex02: dict) -> None:
    d = ex02["rmsnorm_def"]
    assert isinstance(d, Definition)
    assert d.var_axes == ["batch"] and d.const_axes == {"hidden": 4096}
    assert d.problems(strict=True) == []
    assert d.input_shapes_by_name({"batch": 32}) == {"x": (32, 4096), "weight": (4096,), "eps": None}
    assert d.get_input_shapes({"batch": 32}) == [[32, 4096], [4096], None]  # 0.1.2's form
    assert d.check_constraints({"batch": 32}) == []
    assert d.bytes_moved({"batch": 32}) == 2 * 32 * 4096 * 2 + 2 * 4096
    assert schema_errors("definition", json.loads(d.model_dump_json())) == []


def test_example02_solution(ex02: dict) -> None:
    s = ex02["triton_solution"]
    assert isinstance(s, Solution)
    assert s.problems() == []
    assert s.spec.entry_file == "kernel.py" and s.spec.entry_symbol == "run"
    assert "rmsnorm_kernel" in s.sources[0].content
    assert schema_errors("solution", json.loads(s.model_dump_json())) == []


def test_example02_workload_and_trace(ex02: dict) -> None:
    w, t = ex02["workload"], ex02["trace"]
    assert isinstance(w, Workload) and isinstance(t, Trace)
    assert w.inputs["eps"].value == 1e-6 and w.inputs["x"].dtype == "float16"
    ev = t.evaluation
    assert isinstance(ev, Evaluation)
    # the flat form of the seed is read back flat ...
    assert ev.speedup_factor == 1.96 and ev.latency_ms == 0.023 and ev.max_relative_error == 1.2e-5
    assert ev.hardware == "NVIDIA_A100_80GB" and ev.status == "PASSED"
    # ... and written nested, as upstream expects
    out = json.loads(t.model_dump_json())
    assert out["evaluation"]["performance"] == {
        "latency_ms": 0.023, "reference_latency_ms": 0.045, "speedup_factor": 1.96,
    }
    assert out["evaluation"]["correctness"]["max_absolute_error"] == 3.4e-4
    assert out["evaluation"]["environment"] == {"hardware": "NVIDIA_A100_80GB", "libs": {}}
    assert "latency_ms" not in out["evaluation"]
    assert schema_errors("trace", out) == []
    assert Trace.model_validate_json(t.model_dump_json()) == t


def test_example02_objects_form_a_valid_dataset(ex02: dict, tmp_path: Path) -> None:
    from flashinfer_bench.data.validate import validate_dataset

    ts = TraceSet()
    ts.add_definition(ex02["rmsnorm_def"])
    ts.add_solution(ex02["triton_solution"])
    ts.add_workload(ex02["workload"], definition="rmsnorm_d4096")
    ts.add_trace(ex02["trace"])
    ts.to_path(tmp_path / "ds")
    problems = validate_dataset(tmp_path / "ds")
    assert [p for p in problems if p.level == "error"] == []


def test_example04_register_save_load(seeds_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    md = seeds_dir / "example-04-custom-kernel.md"
    monkeypatch.chdir(tmp_path)
    ns: dict = {
        # step 3 names the sources of step 2; take them from the same document
        "triton_source": block(md, "Triton Implementation"),
        "cuda_source": block(md, "CUDA Implementation", "cuda"),
    }
    _run(block(md, "Step 1: Define the Kernel"), ns)
    _run(block(md, "Step 3: Register Solutions"), ns)
    saved = tmp_path / "custom_kernels.json"
    assert saved.is_file()
    loaded = TraceSet.load("custom_kernels.json")
    orig = ns["trace_set"]
    assert list(loaded.definitions) == ["fused_add_rmsnorm_d4096"]
    assert loaded.definitions["fused_add_rmsnorm_d4096"] == orig.definitions["fused_add_rmsnorm_d4096"]
    assert [s.name for s in loaded.all_solutions()] == ["fused_add_rmsnorm_triton_v1", "fused_add_rmsnorm_cuda_v1"]
    for s in orig.all_solutions():
        assert loaded.get_solution(s.name) == s
    assert loaded.problems == []
    # the bundle is also what `validate` reads as a single file, without errors: the Triton entry
    # returns its outputs and its BuildSpec does not say destination_passing_style, so the calling
    # convention is the one its signature fits (as the document expects: "Triton: PASSED")
    from flashinfer_bench.data.signature import effective_dps
    from flashinfer_bench.data.validate import validate_dataset

    errs = [p for p in validate_dataset(saved) if p.level == "error"]
    assert errs == [], errs
    d = loaded.definitions["fused_add_rmsnorm_d4096"]
    assert effective_dps(loaded.get_solution("fused_add_rmsnorm_triton_v1"), d) is False
    assert "destination_passing_style" not in saved.read_text()  # still unsaid after the round trip


def test_readme_from_path(seeds_dir: Path, anchor_dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    md = seeds_dir / "readme.md"
    shutil.copytree(anchor_dataset, tmp_path / "dataset")
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    _run(block(md, "Installation"), ns)  # import flashinfer_bench as fib
    _run(block(md, "Dataset Layout"), ns)
    ts = ns["trace_set"]
    assert isinstance(ts, TraceSet) and ns["fib"].TraceSet is TraceSet
    assert sorted(ts.definitions) == ["fused_add_rmsnorm_d4096", "rmsnorm_d4096"]
    assert ts.summary()["workloads"] == 14 and ts.problems == []


@pytest.mark.slow
def test_example04_triton_solution_passes_as_written(seeds_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the document's expected output: "Triton: PASSED" (its BuildSpec leaves
    # destination_passing_style unsaid; its run returns (out, residual_out))
    from flashinfer_bench import Benchmark, BenchmarkConfig

    md = seeds_dir / "example-04-custom-kernel.md"
    monkeypatch.chdir(tmp_path)
    ns: dict = {"triton_source": block(md, "Triton Implementation"), "cuda_source": block(md, "CUDA Implementation", "cuda")}
    _run(block(md, "Step 1: Define the Kernel"), ns)
    _run(block(md, "Step 3: Register Solutions"), ns)
    ts = TraceSet.load("custom_kernels.json")
    wl = Workload(axes={"batch": 2}, inputs={"input": {"type": "random"}, "residual": {"type": "random"},
                                             "weight": {"type": "random"}, "eps": {"type": "scalar", "value": 1e-6}})
    ts.add_workload(wl, definition="fused_add_rmsnorm_d4096")
    bench = Benchmark(ts, BenchmarkConfig(device="cpu", max_time_s=0.05, iterations=5, worker_dir=str(tmp_path / "w"),
                                          cache_dir=str(tmp_path / "cache"), solutions=["fused_add_rmsnorm_triton_v1"]))
    try:
        results = bench.run_all()
    finally:
        from flashinfer_bench.bench.client import shutdown_worker

        shutdown_worker("cpu", bench.eval_config)
    assert [(t.solution, t.evaluation.status.value) for t in results] == [("fused_add_rmsnorm_triton_v1", "PASSED")], \
        [t.evaluation.log for t in results]
