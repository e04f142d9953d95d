"""Bad input gives a readable report, never a traceback: an empty dataset, a definition without
traces, only failed traces, traces whose solution or definition is gone, NaN latencies."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from flashinfer_bench.data import EvaluationStatus, TraceSet, Workload
from flashinfer_bench.report import summarize, write_report

from . import dataset as ds

FORMATS = ("text", "csv", "json", "markdown")


def run_all(cli, path: Path, tmp_path: Path) -> dict:
    """Every command in every format plus the HTML report; each must succeed."""
    outs = {}
    for command in ("summary", "best", "roofline"):
        for fmt in FORMATS:
            rc, out, err = cli("report", command, "--local", str(path), "--format", fmt)
            assert rc == 0 and "Traceback" not in err, (command, fmt, err)
            if fmt == "json":
                json.loads(out)
            outs[(command, fmt)] = out
    rc, out, err = cli("report", "html", "--local", str(path), "--output", str(tmp_path / "html"))
    assert rc == 0, err
    outs["html"] = (tmp_path / "html" / "index.html").read_text()
    return outs


def one_definition(traces) -> TraceSet:
    ts = TraceSet()
    ts.add_definition(ds.rmsnorm_def())
    ts.add_solution(ds.solution("triton_row", "rmsnorm_h4096", "alice"))
    ts.add_traces(traces)
    return ts


def wl(b: int) -> Workload:
    return Workload(axes={"batch_size": b}, uuid=f"w{b}")


def test_empty_dataset_directory(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    outs = run_all(cli, tmp_path / "empty", tmp_path)
    assert "Traces: 0 total, 0 passed, 0 failed" in outs[("summary", "text")]
    # the reason, not just the fact: which folder was looked at, and what would fill it
    text = " ".join(outs[("summary", "text")].split())  # the path's length moves the wrap
    assert "No result traces" in text and "no traces/ folder" in text
    assert "No result traces" in outs[("best", "text")]
    assert "no traces/ folder" in outs["html"]
    assert json.loads(outs[("summary", "json")])["leaderboard"] == []
    assert "No failed traces" in outs["html"]
    assert (tmp_path / "html" / "plots").is_dir() and (tmp_path / "html" / "tables" / "best.html").is_file()


def test_missing_path_is_a_message(cli, tmp_path):
    rc, out, err = cli("report", "summary", "--local", str(tmp_path / "nope"))
    assert rc == 1 and "no such dataset" in err


def test_definitions_without_traces(cli, anchor_dataset, tmp_path):
    """A real FlashInfer-Bench 0.1.2 dataset with definitions and solutions but no traces."""
    outs = run_all(cli, anchor_dataset, tmp_path)
    assert ": no traces (" in outs[("summary", "text")]


def test_definition_without_traces_next_to_one_with(cli, dataset_dir):
    rc, out, _ = cli("report", "summary", "--local", str(dataset_dir))
    assert "Definition rmsnorm_h8192_untested: no traces (1 solution(s), 1 workload(s)" in out


def test_only_failed_traces(cli, tmp_path):
    ts = one_definition([
        ds.failed("rmsnorm_h4096", "triton_row", wl(1), ds.H100, EvaluationStatus.RUNTIME_ERROR, "CUDA error: an illegal memory access"),
        ds.failed("rmsnorm_h4096", "triton_row", wl(8), ds.H100, EvaluationStatus.INCORRECT_NUMERICAL, "max abs 4.0"),
    ])
    ts.to_path(tmp_path / "ds")
    outs = run_all(cli, tmp_path / "ds", tmp_path)
    assert "Traces: 2 total, 0 passed, 2 failed" in outs[("summary", "text")]
    assert "no correct solution" in outs[("best", "text")]
    assert "No timed traces" in outs[("roofline", "text")]
    assert "CUDA error: an illegal memory access" in outs["html"] and "no correct timed results to plot" in outs["html"]


def test_orphan_solution_and_definition(cli, tmp_path):
    ts = one_definition([
        ds.passed("rmsnorm_h4096", "gone_solution", wl(4), ds.H100, 0.01, 0.02),
        ds.passed("gone_definition", "gone_too", Workload(axes={"n": 1}, uuid="g1"), ds.H100, 0.01, 0.02),
    ])
    ts.to_path(tmp_path / "ds")
    outs = run_all(cli, tmp_path / "ds", tmp_path)
    text = outs[("summary", "text")]
    assert "gone_solution: not in the dataset any more" in text
    assert "gone_definition: not in the dataset any more" in text
    assert "gone_definition" in outs["html"]


def test_nan_latencies(cli, tmp_path):
    ts = one_definition([
        ds.passed("rmsnorm_h4096", "triton_row", wl(1), ds.H100, math.nan, 0.02),
        ds.passed("rmsnorm_h4096", "triton_row", wl(8), ds.H100, math.inf, math.nan),
        ds.passed("rmsnorm_h4096", "triton_row", wl(64), ds.H100, 0.0, 0.0),
        ds.passed("rmsnorm_h4096", "triton_row", wl(512), ds.H100, 0.05, 0.1, 0.02),
    ])
    ts.to_path(tmp_path / "ds")
    assert '"NaN"' in next((tmp_path / "ds" / "traces").rglob("*.jsonl")).read_text()
    outs = run_all(cli, tmp_path / "ds", tmp_path)
    assert "3 PASSED traces have no usable latency" in outs[("summary", "text")]
    assert "PASSED, no latency" in outs[("summary", "text")]
    data = json.loads(outs[("summary", "json")])
    assert data["leaderboard"][0]["geomean_speedup"] == pytest.approx(2.0)
    s = summarize(TraceSet.from_path(tmp_path / "ds"))
    assert s.best.winner.tolist().count("triton_row") == 1


def test_broken_trace_lines_are_reported_not_raised(cli, tmp_path):
    ts = one_definition([ds.passed("rmsnorm_h4096", "triton_row", wl(1), ds.H100, 0.01, 0.02)])
    ts.to_path(tmp_path / "ds")
    f = next((tmp_path / "ds" / "traces").rglob("*.jsonl"))
    f.write_text(f.read_text() + "{not json\n" + json.dumps({"definition": "x"}) + "\n")
    rc, out, err = cli("report", "summary", "--local", str(tmp_path / "ds"))
    assert rc == 0 and "problems while loading the dataset" in out and "Traces: 1 total" in out


def test_write_report_on_an_in_memory_empty_trace_set(tmp_path):
    index = write_report(TraceSet(), tmp_path / "r")
    text = index.read_text()
    assert index.name == "index.html" and "Traces: <b>0</b> total" in text
