"""What a person reading the output relies on (issue 17, "Output a person reads"), through the CLI
and the public API: speedups never print as 0.00x, latency is in microseconds and says so, text
fits 100 columns, each definition and device has a top-line answer, workloads are named by their
axes, `report html` says what was skipped and why, "no traces" says why, and many devices fold
instead of drowning the report."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flashinfer_bench.data import TraceSet, Workload

from . import dataset as ds

WIDTH = 100


@pytest.fixture(scope="module")
def wide_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("wide")
    ds.wide().to_path(root)
    return root


def outputs(cli, path: Path) -> dict:
    out = {}
    for command in ("summary", "best", "roofline"):
        for fmt in ("text", "markdown"):
            rc, text, err = cli("report", command, "--local", str(path), "--format", fmt)
            assert rc == 0, err
            out[(command, fmt)] = text
    return out


def test_speedups_never_read_zero(cli, wide_dir, tmp_path):
    from flashinfer_bench.report.html import write_stage_report

    texts = outputs(cli, wide_dir)
    res = write_stage_report(TraceSet.from_path(wide_dir), tmp_path / "summary.txt", tmp_path / "index.html")
    texts["run summary"] = (tmp_path / "summary.txt").read_text()
    texts["html"] = res.index.read_text()
    for name, text in texts.items():
        assert not re.search(r"(?<![\d.])0\.0+x", text), name  # 0.00x, 0.0x
    # the slowest solution's 0.0049x shows with its significant digits
    assert "0.0049x" in texts[("summary", "text")] and "0.0049x" in texts["html"]
    assert "250x" in texts[("best", "text")] or "250x" in texts[("summary", "text")]


def test_latency_in_microseconds_and_labelled(cli, dataset_dir, tmp_path):
    texts = outputs(cli, dataset_dir)
    for (command, fmt), text in texts.items():
        assert "microseconds" in text or "(us)" in text, command
        assert not re.search(r"\d ms\b", text), (command, fmt)  # no latency left in milliseconds
    summary = texts[("summary", "text")]
    assert "latency (us)" in summary and "4.10 us 5.00x" in summary  # 0.0041 ms on the H100
    assert "4.10" in texts[("best", "text")]
    rc, out, err = cli("report", "html", "--local", str(dataset_dir), "--output", str(tmp_path / "h"))
    page = (tmp_path / "h" / "index.html").read_text()
    assert "latency (µs)" in page and "4.10 µs" in page and not re.search(r"\d ms\b", page)
    # scripts keep the trace format's milliseconds, in columns that say so
    rc, csv, _ = cli("report", "summary", "--local", str(dataset_dir), "--format", "csv", "--table", "matrix")
    assert "latency_ms" in csv.splitlines()[0]


def test_run_progress_line_uses_the_same_units_and_names():
    from flashinfer_bench.pipeline.thin_client import _progress

    trace = {"solution": "triton_row", "workload": {"uuid": "3f2a-uuid", "axes": {"batch_size": 64, "num_pages": 300000}},
             "evaluation": {"status": "PASSED", "performance": {"latency_ms": 2.6044, "reference_latency_ms": 0.01276,
                                                                "speedup_factor": 0.0049}}}
    line = _progress(trace, 0.3)
    assert line.startswith("triton_row x batch_size=64,num_pages=300000: PASSED 2,604 us (reference 12.8 us, 0.0049x)")
    assert "3f2a-uuid" not in line


@pytest.mark.parametrize("which", ["dataset_dir", "wide_dir"])
def test_text_fits_100_columns(cli, which, request, tmp_path):
    from flashinfer_bench.report.html import write_stage_report

    path = request.getfixturevalue(which)
    texts = {k: v for k, v in outputs(cli, path).items() if k[1] == "text"}
    write_stage_report(TraceSet.from_path(path), tmp_path / "summary.txt", tmp_path / "index.html")
    texts["run summary"] = (tmp_path / "summary.txt").read_text()
    for name, text in texts.items():
        wide = [line for line in text.splitlines() if len(line) > WIDTH]
        assert not wide, (name, wide[:2])
    # nothing is lost: the long names are whole in CSV and JSON
    rc, out, _ = cli("report", "summary", "--local", str(path), "--format", "json")
    names = {r["solution"] for r in json.loads(out)["leaderboard"]}
    assert all(n in out for n in names)


def test_a_top_line_per_definition_and_device(cli, dataset_dir):
    rc, out, _ = cli("report", "summary", "--local", str(dataset_dir))
    assert "Top line per definition and device" in out
    # H100: triton_row is correct everywhere and fastest; cuda_vec failed to compile
    assert "best triton_row (alice): 5.00x vs reference (geomean over its 4 passed workloads); 4 of 5 solutions " \
           "correct on every workload; 4 of 4 workloads have a correct solution." in out.replace("\n  ", " ")
    # gemm: the faster solution failed a workload, so the best correct one is the baseline
    assert re.search(r"gemm_n256_k256\s+NVIDIA H100 80GB HBM3\s+gemm_torch\s+1\.00x\s+1/2\s+3/3", out)
    rc, out, _ = cli("report", "summary", "--local", str(dataset_dir), "--format", "json")
    heads = {(h["definition"], h["hardware"]): h for h in json.loads(out)["headlines"]}
    h = heads[("rmsnorm_h4096", ds.H200)]
    assert h["best_solution"] == "triton_row" and h["solutions_correct"] == 2 and h["workloads_solved"] == 4


def test_workloads_named_by_their_axes(cli, wide_dir, tmp_path):
    rc, out, _ = cli("report", "best", "--local", str(wide_dir))
    # a long list of axes wraps after its commas, never in a name or a number
    lines = out.splitlines()
    starts = [i for i, x in enumerate(lines) if x.startswith("batch_size=64,")]
    assert any([lines[i + k].split()[0] for k in range(4)] == ["batch_size=64,", "num_pages=300000,", "len_indptr=65,",
                                                                 "num_kv_indices=16384"] for i in starts), out
    assert "uuid-64-300000" not in out
    rc, out, _ = cli("report", "html", "--local", str(wide_dir), "--output", str(tmp_path / "h"))
    page = (tmp_path / "h" / "index.html").read_text().replace("<wbr>", "")  # <wbr>: where a cell may wrap
    assert "batch_size=64,num_pages=300000,len_indptr=65,num_kv_indices=16384" in page


def test_report_html_says_what_was_skipped_and_why(cli, dataset_dir, tmp_path, monkeypatch):
    # no reasons given: every pair without a trace is listed, and the output says reasons are missing
    rc, out, err = cli("report", "html", "--local", str(dataset_dir), "--output", str(tmp_path / "a"))
    assert rc == 0, err
    assert "Skipped: 1 (solution, workload) pairs without a trace (no skip reasons given" in out
    assert "no trace: not benchmarked" in out
    page = (tmp_path / "a" / "index.html").read_text().replace("<wbr>", "")
    sk = page.split('id="skipped"')[1].split("</section>")[0]
    assert "never_run" in sk and "batch_size=4" in sk
    # the pipeline's notes next to the run: found, named, and their reasons used
    monkeypatch.chdir(tmp_path)
    notes = tmp_path / "results" / "plan" / "notes.json"
    notes.parent.mkdir(parents=True)
    notes.write_text(json.dumps({"skipped": [
        {"definition": "rmsnorm_h8192_untested", "solution": "never_run", "workload": "untested-b4",
         "reason": "workload above the CPU size limit (x: 4 elements > 1)"},
        {"definition": "other_dataset_def", "solution": "s", "workload": "w", "reason": "not ours"}], "problems": []}))
    rc, out, err = cli("report", "html", "--local", str(dataset_dir), "--output", str(tmp_path / "b"))
    assert f"reasons from {Path('results') / 'plan' / 'notes.json'}" in out
    assert "1 pair(s): workload above the CPU size limit" in out and "not ours" not in out
    sk = (tmp_path / "b" / "index.html").read_text().replace("<wbr>", "").split('id="skipped"')[1].split("</section>")[0]
    assert "workload above the CPU size limit" in sk and "batch_size=4" in sk


def test_no_traces_says_why(cli, tmp_path):
    root = tmp_path / "ds"
    ts = TraceSet()
    ts.add_definition(ds.rmsnorm_def())
    ts.add_workload(Workload(axes={"batch_size": 1}, uuid="w1"), definition="rmsnorm_h4096")
    ts.to_path(root)
    rc, out, err = cli("report", "summary", "--local", str(root))
    flat = out.replace("\n  ", " ")  # paragraphs wrap at the table width
    assert rc == 0 and "no traces/ folder" in flat and f"flashinfer-bench run --local {root}" in flat
    # a traces file holding only workload lines and a broken line: which file, and what its lines were
    (root / "traces" / "rmsnorm").mkdir(parents=True)
    (root / "traces" / "rmsnorm" / "rmsnorm_h4096.jsonl").write_text(
        (root / "workloads" / "rmsnorm" / "rmsnorm_h4096.jsonl").read_text() + "{not json\n")
    rc, out, err = cli("report", "summary", "--local", str(root))
    flat = out.replace("\n  ", " ")
    assert "read 1 trace file(s)" in flat and "traces/rmsnorm/rmsnorm_h4096.jsonl" in flat
    assert "1 without an evaluation (workload lines, not results)" in flat and "1 that did not parse" in flat
    assert "No result traces" in err  # said on stderr too, whatever the format
    rc, out, err = cli("report", "html", "--local", str(root), "--output", str(tmp_path / "h"))
    assert "No result traces: read 1 trace file(s)" in out
    assert "read 1 trace file(s)" in (tmp_path / "h" / "index.html").read_text()


def test_many_devices_fold_into_one_row_each(cli, tmp_path):
    """Traces on hundreds of distinct device names (the 50,000-trace case, scaled down): the 8
    devices with the most traces get sections and plots, the others one row each; nothing is
    dropped from the CSV."""
    ts = TraceSet()
    ts.add_definition(ds.rmsnorm_def())
    for s in ("a", "b"):
        ts.add_solution(ds.solution(s, "rmsnorm_h4096", "x"))
    wls = [Workload(axes={"batch_size": b}, uuid=f"w{b}") for b in (1, 8)]
    for w in wls:
        ts.add_workload(w, definition="rmsnorm_h4096")
    n_hw = 300
    for i in range(n_hw):
        hw = f"GPU model {i:04d}"
        for s in ("a", "b")[: 2 if i < 3 else 1]:  # the first three devices have the most traces
            for w in wls:
                ts.add_trace(ds.passed("rmsnorm_h4096", s, w, hw, 0.01 * (1 + i % 7), 0.02))
    root = tmp_path / "ds"
    ts.to_path(root)
    rc, out, err = cli("report", "html", "--local", str(root), "--output", str(tmp_path / "h"))
    assert rc == 0, err
    assert f"Folded: {n_hw - 8} (definition, device) groups" in out
    page = (tmp_path / "h" / "index.html").read_text()
    assert page.count('<h3 id="g-rmsnorm_h4096--') == 8
    for i in range(3):
        assert f'id="g-rmsnorm_h4096--GPU_model_{i:04d}"' in page
    assert f"{n_hw - 8} more devices" in page
    assert len(list((tmp_path / "h" / "plots").glob("*.svg"))) <= 8 * 3
    assert (tmp_path / "h" / "headlines.csv").read_text().count("\n") == n_hw + 1
    rc, out, _ = cli("report", "summary", "--local", str(root))
    assert f"rmsnorm_h4096: {n_hw - 8} more devices" in out and max(len(x) for x in out.splitlines()) <= WIDTH
    rc, out, _ = cli("report", "summary", "--local", str(root), "--max-devices", "0")
    assert out.count("rmsnorm_h4096 on GPU model") == n_hw


def test_skipped_pairs_group_by_the_limit_that_skipped_them():
    from flashinfer_bench.report.views import skipped_lines

    skipped = [
        {"definition": "d", "solution": "s", "workload": "w1", "reason": "2097152 elements is above the CPU limit cpu.max_elements=524288"},
        {"definition": "d", "solution": "s", "workload": "w2", "reason": "8388608 elements is above the CPU limit cpu.max_elements=524288"},
        {"definition": "d", "solution": "c", "workload": "w1", "reason": "cuda solution needs a GPU (compiled only)"},
    ]
    lines = skipped_lines(skipped, {("d", "w1"): "batch_size=512", ("d", "w2"): "batch_size=2048"})
    assert lines[0].startswith("2 pair(s): N elements is above the CPU limit cpu.max_elements=524288 [solutions: s]")
    assert "batch_size=512; batch_size=2048" in lines[0]
    assert lines[1].startswith("1 pair(s): cuda solution needs a GPU (compiled only)")
