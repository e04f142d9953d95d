"""FlashInfer-Bench 0.1.2's everyday data API, used as a 0.1.2 user's script uses it.

Every expectation here is 0.1.2's own behaviour (its wheel: flashinfer_bench/data/*.py), except
where a comment says ours differs and why. No mocks: real files in tmp_path.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import List

import pytest
from pydantic import ValidationError

from flashinfer_bench.data import (
    AxisConst,
    AxisVar,
    BuildSpec,
    Correctness,
    Definition,
    Environment,
    Evaluation,
    EvaluationStatus,
    Performance,
    RandomInput,
    ScalarInput,
    Solution,
    SourceFile,
    SupportedBindings,
    SupportedLanguages,
    TensorSpec,
    Trace,
    TraceSet,
    Workload,
    append_jsonl_file,
    load_json_file,
    load_jsonl_file,
    save_json_file,
    save_jsonl_file,
)

HW = "NVIDIA H100 80GB HBM3"


def rmsnorm() -> Definition:
    return Definition(
        name="rmsnorm_d4096",
        op_type="rmsnorm",
        axes={"batch": AxisVar(), "hidden": AxisConst(value=4096)},
        inputs={
            "x": TensorSpec(shape=["batch", "hidden"], dtype="float16"),
            "weight": TensorSpec(shape=["hidden"], dtype="float16"),
            "eps": TensorSpec(shape=None, dtype="float32"),
        },
        outputs={"out": TensorSpec(shape=["batch", "hidden"], dtype="float16")},
        reference="import torch\n\ndef run(x, weight, eps):\n    return x\n",
    )


def triton_solution(name: str = "rms_triton") -> Solution:
    return Solution(
        name=name, definition="rmsnorm_d4096", author="alice",
        spec=BuildSpec(language=SupportedLanguages.TRITON, target_hardware=["cuda"],
                       entry_point="src/kernel.py::run", destination_passing_style=False),
        sources=[SourceFile(path="src/util.py", content="X = 1\n"),
                 SourceFile(path="src/kernel.py", content="def run(x, weight, eps):\n    return x\n")],
    )


def workload(batch: int) -> Workload:
    return Workload(axes={"batch": batch}, uuid=f"b{batch}",
                    inputs={"x": RandomInput(), "weight": RandomInput(), "eps": ScalarInput(value=1e-6)})


def passed(sol: str, batch: int, latency: float, err: float = 1e-5, hw: str = HW) -> Trace:
    return Trace(definition="rmsnorm_d4096", workload=workload(batch), solution=sol, evaluation=Evaluation(
        status=EvaluationStatus.PASSED, environment=Environment(hardware=hw), timestamp="2026-02-01T00:00:00",
        correctness=Correctness(max_relative_error=err, max_absolute_error=err),
        performance=Performance(latency_ms=latency, reference_latency_ms=0.05, speedup_factor=0.05 / latency)))


def failed(sol: str, batch: int) -> Trace:
    return Trace(definition="rmsnorm_d4096", workload=workload(batch), solution=sol, evaluation=Evaluation(
        status=EvaluationStatus.RUNTIME_ERROR, environment=Environment(hardware=HW),
        timestamp="2026-02-01T00:00:01", log="boom"))


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A dataset directory written with the 0.1.2 helpers, laid out as 0.1.2 lays it out."""
    root = tmp_path / "ds"
    d, s = rmsnorm(), triton_solution()
    save_json_file(d, root / "definitions" / d.op_type / f"{d.name}.json")
    save_json_file(s, root / "solutions" / s.author / d.op_type / d.name / f"{s.name}.json")
    save_jsonl_file([Trace(definition=d.name, workload=workload(b)) for b in (1, 8)],
                    root / "workloads" / d.op_type / f"{d.name}.jsonl")
    return root


# ----------------------------------------------------------------------------- JSON helpers
def test_json_file_round_trip_creates_parents(tmp_path: Path) -> None:
    d, s = rmsnorm(), triton_solution()
    save_json_file(d, tmp_path / "a" / "b" / "def.json")
    save_json_file(s, tmp_path / "sol.json")
    assert load_json_file(Definition, tmp_path / "a" / "b" / "def.json") == d
    assert load_json_file(Solution, str(tmp_path / "sol.json")) == s  # str paths too
    assert json.loads((tmp_path / "sol.json").read_text())["spec"]["entry_point"] == "src/kernel.py::run"


def test_json_file_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_json_file(Definition, tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text(json.dumps({"name": "x"}))
    with pytest.raises(ValidationError):
        load_json_file(Definition, tmp_path / "bad.json")


def test_jsonl_save_load_append(tmp_path: Path) -> None:
    p = tmp_path / "deep" / "t.jsonl"
    first: List[Trace] = [passed("a", 1, 0.02), failed("b", 1)]
    save_jsonl_file(first, p)
    assert p.read_text().count("\n") == 2 and load_jsonl_file(Trace, p) == first
    # a file whose last line lacks its newline (written by hand) gets one before the new lines
    p.write_text(p.read_text().rstrip("\n"))
    append_jsonl_file([passed("c", 8, 0.01)], p)
    assert [t.solution for t in load_jsonl_file(Trace, p)] == ["a", "b", "c"]
    # blank lines are skipped; appending to a new file creates it (and its folder)
    p.write_text(p.read_text() + "\n\n")
    assert len(load_jsonl_file(Trace, p)) == 3
    append_jsonl_file([failed("d", 8)], tmp_path / "new" / "n.jsonl")
    assert [t.solution for t in load_jsonl_file(Trace, tmp_path / "new" / "n.jsonl")] == ["d"]
    # save replaces the whole file
    save_jsonl_file([failed("e", 1)], p)
    assert [t.solution for t in load_jsonl_file(Trace, p)] == ["e"]
    p.write_text('{"definition": "x"}\n')
    with pytest.raises(ValidationError):
        load_jsonl_file(Trace, p)


def test_jsonl_line_with_unicode_line_separator_stays_one_line(tmp_path: Path) -> None:
    t = failed("a", 1)
    t = t.model_copy(update={"evaluation": t.evaluation.model_copy(update={"log": "x\u2028y\x0cz"})})
    save_jsonl_file([t], tmp_path / "t.jsonl")
    assert load_jsonl_file(Trace, tmp_path / "t.jsonl")[0].evaluation.log == "x\u2028y\x0cz"


# ----------------------------------------------------------------------------- Trace / Solution
def test_trace_predicates() -> None:
    wl = Trace(definition="rmsnorm_d4096", workload=workload(1))
    assert wl.is_workload_trace() and not wl.is_successful()
    assert passed("a", 1, 0.02).is_successful() and not passed("a", 1, 0.02).is_workload_trace()
    assert not failed("a", 1).is_successful() and not failed("a", 1).is_workload_trace()


def test_solution_entry_accessors() -> None:
    s = triton_solution()
    assert s.get_entry_path() == Path("src/kernel.py")
    assert s.get_entry_symbol() == "run"
    assert s.get_entry_source() is s.sources[1]
    cuda = BuildSpec(language="cuda", target_hardware=["cuda"], entry_point="k.cu::run", binding=SupportedBindings.TORCH)
    assert cuda.binding == "torch" and SupportedBindings("tvm-ffi") is SupportedBindings.TVM_FFI


# ----------------------------------------------------------------------------- Definition
def test_definition_shapes_are_positional_lists() -> None:
    d = rmsnorm()
    assert d.get_input_shapes({"batch": 32}) == [[32, 4096], [4096], None]
    assert d.get_output_shapes({"batch": 32}) == [[32, 4096]]
    assert d.const_axes == {"hidden": 4096} and d.var_axes == ["batch"]
    assert d.var_axes_bindings == {"batch": ("x", 0)}
    with pytest.raises(ValueError):
        d.get_input_shapes()  # the var axis has no value
    with pytest.raises(ValueError):
        d.get_input_shapes({"hidden": 4096})


def test_definition_axes_values_from_shapes_and_inputs() -> None:
    torch = pytest.importorskip("torch")
    d = rmsnorm()
    assert d.get_axes_values([(16, 4096), (4096,), None]) == {"batch": 16}
    assert d.get_axes_values([(16, 4096)]) == {"batch": 16}  # a prefix of the inputs is enough
    with pytest.raises(ValueError):
        d.get_axes_values([(16,), (4096,), None])  # wrong rank
    with pytest.raises(ValueError):  # ours: a ShapeError (0.1.2: a TypeError from len(None))
        d.get_axes_values([None, (4096,), None])
    x, w = torch.zeros(3, 4096, dtype=torch.float16), torch.ones(4096, dtype=torch.float16)
    assert d.get_axes_values_from_inputs([x, w, 1e-6]) == {"batch": 3}
    assert d.torch_input_dtypes == [torch.float16, torch.float16, torch.float32]
    assert d.torch_output_dtypes == [torch.float16]


# ----------------------------------------------------------------------------- TraceSet
def test_add_traces_writes_to_the_dataset(dataset: Path) -> None:
    ts = TraceSet.from_path(str(dataset))
    assert [w.workload.uuid for w in ts.workloads["rmsnorm_d4096"]] == ["b1", "b8"]
    assert all(w.is_workload_trace() for w in ts.workloads["rmsnorm_d4096"])
    ts.add_traces([passed("rms_triton", 1, 0.02), failed("rms_triton", 8)])
    assert ts.traces_path == dataset / "traces"
    on_disk = load_jsonl_file(Trace, dataset / "traces" / "rmsnorm" / "rmsnorm_d4096.jsonl")
    assert [(t.solution, t.workload.uuid) for t in on_disk] == [("rms_triton", "b1"), ("rms_triton", "b8")]
    back = TraceSet.from_path(dataset)
    assert back.summary()["total"] == 2 and back.summary()["passed"] == 1
    assert back.get_solution("rms_triton") == triton_solution()
    # ours: a result for the same solution, workload and hardware replaces the earlier one (the
    # rule `flashinfer-bench run` writes by); 0.1.2 appends a second line
    ts.add_traces([passed("rms_triton", 1, 0.01)])
    again = TraceSet.from_path(dataset)
    assert again.summary()["total"] == 2 and len(ts.traces["rmsnorm_d4096"]) == 2
    assert again.get_best_trace("rmsnorm_d4096").evaluation.performance.latency_ms == 0.01


def test_add_traces_of_an_unknown_definition_raises(dataset: Path) -> None:
    ts = TraceSet.from_path(dataset)
    other = passed("rms_triton", 1, 0.02).model_copy(update={"definition": "not_here"})
    with pytest.raises(ValueError):
        ts.add_traces([passed("rms_triton", 8, 0.02), other])
    assert not (dataset / "traces").exists()
    assert ts.traces.get("rmsnorm_d4096", []) == []  # ours: nor in memory (0.1.2 keeps the first)


def test_add_workload_traces_appends(dataset: Path) -> None:
    ts = TraceSet.from_path(dataset)
    ts.add_workload_traces([Trace(definition="rmsnorm_d4096", workload=workload(64))])
    assert [w.workload.uuid for w in TraceSet.from_path(dataset).workloads["rmsnorm_d4096"]] == ["b1", "b8", "b64"]


def test_in_memory_trace_set_writes_nothing(tmp_path: Path) -> None:
    # ours: a set without a root keeps added traces in memory (0.1.2 raises "Root path is not set")
    ts = TraceSet()
    ts.definitions["rmsnorm_d4096"] = rmsnorm()
    ts.add_traces([passed("a", 1, 0.02)])
    assert ts.summary()["total"] == 1 and list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError):
        ts.traces_path  # no root


def test_from_path_without_a_path_reads_the_environment(dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLASHINFER_BENCH_DATASET_PATH", raising=False)
    monkeypatch.setenv("FIB_DATASET_PATH", str(dataset))
    ts = TraceSet.from_path()
    assert ts.root == dataset and list(ts.definitions) == ["rmsnorm_d4096"]


def test_best_trace_filter_traces_and_summary(dataset: Path) -> None:
    ts = TraceSet.from_path(dataset)
    ts.add_traces([
        passed("a", 1, 0.020), passed("b", 1, 0.010), passed("c", 1, 0.001, err=0.5),  # c is wrong
        passed("a", 8, 0.040), passed("b", 8, 0.050), failed("d", 8),
    ])
    best = ts.get_best_trace("rmsnorm_d4096")
    assert (best.solution, best.workload.uuid) == ("b", "b1")  # highest speedup within 1e-2 errors
    assert ts.get_best_trace("rmsnorm_d4096", axes={"batch": 8}).solution == "a"
    assert ts.get_best_trace("rmsnorm_d4096", axes={"batch": 8}, max_abs_error=1e-6) is None
    assert ts.get_best_trace("rmsnorm_d4096", max_abs_error=1.0, max_rel_error=1.0).solution == "c"
    assert ts.get_best_trace("nope") is None
    assert {t.solution for t in ts.filter_traces("rmsnorm_d4096")} == {"a", "b"}
    assert len(ts.filter_traces("rmsnorm_d4096", atol=1.0, rtol=1.0)) == 5
    assert ts.filter_traces("nope") == []
    s = ts.summary()
    assert (s["total"], s["passed"], s["failed"]) == (6, 5, 1)
    assert s["min_latency_ms"] == 0.001 and s["max_latency_ms"] == 0.050
    assert s["avg_latency_ms"] == pytest.approx((0.020 + 0.010 + 0.001 + 0.040 + 0.050) / 5)
    empty = TraceSet().summary()
    assert (empty["total"], empty["min_latency_ms"], empty["avg_latency_ms"]) == (0, None, None)


def test_blob_tensors_and_backup(dataset: Path) -> None:
    torch = pytest.importorskip("torch")
    from flashinfer_bench.data import SafetensorsInput

    ts = TraceSet.from_path(dataset)
    x = torch.randn(2, 4096, dtype=torch.float16)
    rel = ts.add_workload_blob_tensor("rmsnorm_d4096", "blob2", {"x": x, "weight": torch.ones(4096, dtype=torch.float16)})
    assert rel == "blob/workloads/rmsnorm/rmsnorm_d4096/rmsnorm_d4096_blob2.safetensors"
    with pytest.raises(ValueError):
        ts.add_workload_blob_tensor("rmsnorm_d4096", "blob2", {"x": x})  # never overwritten
    assert torch.equal(ts.get_workload_blob_tensor(rel)["x"], x)
    wl = Workload(axes={"batch": 2}, uuid="blob2", inputs={
        "x": SafetensorsInput(path=rel, tensor_key="x"), "weight": SafetensorsInput(path=rel, tensor_key="weight"),
        "eps": ScalarInput(value=1e-6)})
    ts.add_workload_traces([Trace(definition="rmsnorm_d4096", workload=wl)])
    from flashinfer_bench.data import validate_dataset  # ours: the blob workload validates

    assert [p for p in validate_dataset(dataset) if p.level == "error"] == []
    ts.add_traces([passed("rms_triton", 2, 0.02)])
    ts.backup_traces()
    assert list(ts.traces_path.iterdir()) == []
    (backup,) = [p for p in dataset.iterdir() if p.name.startswith("traces_bak_")]
    assert len(load_jsonl_file(Trace, backup / "rmsnorm" / "rmsnorm_d4096.jsonl")) == 1
