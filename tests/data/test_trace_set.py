"""TraceSet: lookups, best traces, summary, writing a dataset back."""
from __future__ import annotations

from pathlib import Path

import pytest

from flashinfer_bench.data import Evaluation, Trace, TraceSet, Workload

from .dsbuild import make_dataset


def _trace(sol: str, uuid: str, lat: float, status: str = "PASSED", hw: str = "GPU-A") -> Trace:
    kw = dict(max_relative_error=0.0, max_absolute_error=0.0, latency_ms=lat, reference_latency_ms=1.0,
              speedup_factor=1.0 / lat) if status == "PASSED" else {}
    return Trace(definition="rmsnorm_d4096", solution=sol,
                 workload=Workload(axes={"batch_size": 1}, inputs={}, uuid=uuid),
                 evaluation=Evaluation(status=status, hardware=hw, **kw))


def test_best_trace_solution_and_summary(tmp_path: Path) -> None:
    ts = TraceSet.from_path(make_dataset(tmp_path / "ds"))
    ts.add_traces([
        _trace("a", "w1", 0.5), _trace("b", "w1", 0.4), _trace("c", "w1", 0.1, "RUNTIME_ERROR"),
        _trace("a", "w8", 0.2), _trace("b", "w8", 0.3),
        _trace("a", "w1", 0.05, hw="GPU-B"),
    ])
    assert ts.best_trace("rmsnorm_d4096", "w1", hardware="GPU-A").solution == "b"
    assert ts.best_trace("rmsnorm_d4096", "w1").solution == "a"  # GPU-B's trace is faster
    assert ts.best_trace("rmsnorm_d4096", "nope") is None
    # one win each on GPU-A: the lower geometric-mean latency breaks the tie
    assert ts.best_solution("rmsnorm_d4096", hardware="GPU-A") == "a"
    assert ts.summary() == {"definitions": 1, "solutions": 1, "workloads": 3, "traces": 6, "total": 6, "passed": 5,
                            "failed": 1, "by_status": {"PASSED": 5, "RUNTIME_ERROR": 1},
                            "min_latency_ms": 0.05, "max_latency_ms": 0.5, "avg_latency_ms": pytest.approx(0.29)}
    assert ts.hardware() == ["GPU-A", "GPU-B"]
    assert [t.solution for t in ts.traces_for("rmsnorm_d4096", solution="a")] == ["a", "a", "a"]


def test_to_path_writes_the_layout_atomically(tmp_path: Path) -> None:
    ts = TraceSet.from_path(make_dataset(tmp_path / "ds"))
    ts.add_trace(_trace("rmsnorm_torch", "w1", 0.5))
    ts.to_path(tmp_path / "out")
    files = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert files == [
        "definitions/rmsnorm/rmsnorm_d4096.json",
        "solutions/tests/rmsnorm/rmsnorm_d4096/rmsnorm_torch.json",
        "traces/rmsnorm/rmsnorm_d4096.jsonl",
        "workloads/rmsnorm/rmsnorm_d4096.jsonl",
    ]  # no temp files left behind
    back = TraceSet.from_path(tmp_path / "out")
    assert back.problems == [] and back.summary()["traces"] == 1


def test_origin_names_file_and_line(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds")
    ts = TraceSet.from_path(root)
    w = ts.workloads["rmsnorm_d4096"][2]
    assert ts.origin(w) == (str(root / "workloads/rmsnorm/rmsnorm_d4096.jsonl"), 3, "")
    assert ts.origin(ts.definitions["rmsnorm_d4096"])[0].endswith("rmsnorm_d4096.json")
    assert ts.origin(_trace("a", "w", 1.0)) == ("<memory>", None, "")
