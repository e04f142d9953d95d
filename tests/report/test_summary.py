"""`report summary`: counts by status, per (definition, hardware) leaderboards and matrices."""
from __future__ import annotations

import math

import pytest

from flashinfer_bench.data import TraceSet
from flashinfer_bench.report import load_paths, summarize

from . import dataset as ds


@pytest.fixture(scope="module")
def summary(dataset_dir):
    return summarize(load_paths([dataset_dir]))


def lb_row(s, definition, hardware, solution):
    lb = s.leaderboard
    rows = lb[(lb.definition == definition) & (lb.hardware == hardware) & (lb.solution == solution)]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_counts_by_status_and_device(summary):
    c = summary.counts.set_index("status")
    assert summary.totals["traces"] == 40 and summary.totals["passed"] == 34 and summary.totals["failed"] == 6
    assert c.loc["total", "all"] == 40
    assert c.loc["COMPILE_ERROR", ds.H100] == 4
    assert c.loc["INCORRECT_NUMERICAL", ds.CPU] == 1
    assert c.loc["TIMEOUT", "all"] == 1
    assert c.loc["failed", ds.H200] == 0


def test_devices_are_never_mixed(summary):
    # the same solution and workloads on three devices: three separate rows, each its own numbers
    h100 = lb_row(summary, "rmsnorm_h4096", ds.H100, "triton_row")
    h200 = lb_row(summary, "rmsnorm_h4096", ds.H200, "triton_row")
    cpu = lb_row(summary, "rmsnorm_h4096", ds.CPU, "triton_row")
    assert h100.geomean_speedup == pytest.approx(5.0, rel=1e-6)
    assert cpu.geomean_speedup == pytest.approx(2.0, rel=1e-6)
    assert h200.geomean_speedup != pytest.approx(h100.geomean_speedup)
    m = summary.matrix
    assert set(m[m.definition == "rmsnorm_h4096"].hardware) == {ds.H100, ds.H200, ds.CPU}
    assert (summary.frame.groupby(["definition", "solution", "workload", "hardware"]).size() == 1).all()


def test_wins_ties_and_geomean(summary):
    row = lb_row(summary, "rmsnorm_h4096", ds.H100, "triton_row")
    twin = lb_row(summary, "rmsnorm_h4096", ds.H100, "triton_twin")
    assert (row.wins, row.clear_wins, row.ties) == (4, 0, 4)  # fastest everywhere, but inside the noise
    assert (twin.wins, twin.ties) == (0, 4)
    cpu = lb_row(summary, "rmsnorm_h4096", ds.CPU, "triton_row")
    assert (cpu.workloads, cpu.passed, cpu.failed, cpu.wins, cpu.clear_wins) == (4, 3, 1, 3, 3)
    broken = lb_row(summary, "rmsnorm_h4096", ds.H100, "cuda_vec")
    assert broken.passed == 0 and broken.failed == 4 and math.isnan(broken.geomean_speedup)


def test_speedup_vs_baseline_author(summary):
    base = lb_row(summary, "rmsnorm_h4096", ds.H100, "torch_baseline")
    row = lb_row(summary, "rmsnorm_h4096", ds.H100, "triton_row")
    assert base.geomean_speedup_vs_baseline == pytest.approx(1.0)
    lat = {b: 0.004 + b * 0.0001 for b in ds.BATCHES}
    ref = {b: 0.010 + b * 0.0002 for b in ds.BATCHES}
    expect = math.exp(sum(math.log(ref[b] / lat[b]) for b in ds.BATCHES) / 4)
    assert row.geomean_speedup_vs_baseline == pytest.approx(expect, rel=1e-9)


def test_without_baseline_author_no_baseline_numbers():
    ts = ds.build()
    kept = TraceSet()
    for d in ts.definitions.values():
        kept.add_definition(d)
    for s in ts.all_solutions():
        if s.author != "baseline":
            kept.add_solution(s)
    kept.add_traces(t for t in ts.all_traces() if t.solution not in ("torch_baseline", "gemm_torch"))
    s = summarize(kept)
    assert not s.leaderboard.empty
    assert s.leaderboard.geomean_speedup_vs_baseline.isna().all()
    assert s.leaderboard.geomean_speedup.notna().any()


def test_a_second_solution_claiming_baseline_sets_no_yardstick():
    """Any solution may name its author `baseline`; a faster second one must not become the
    yardstick of the others (upstream refuses such a dataset): no speedup vs baseline for that
    definition, a note naming both, and the other definitions keep theirs."""
    ts = ds.build()
    rms = ts.get_definition("rmsnorm_h4096")
    ts.add_solution(ds.solution("fast_claim", rms.name, "baseline"))
    w = ts.workloads_for(rms.name)[0].workload
    ts.add_trace(ds.passed(rms.name, "fast_claim", w, ds.H100, 0.0001, 0.03))
    s = summarize(ts)
    lb = s.leaderboard
    assert lb[lb.definition == "rmsnorm_h4096"].geomean_speedup_vs_baseline.isna().all()
    assert s.frame[s.frame.definition == "rmsnorm_h4096"].speedup_vs_baseline.isna().all()
    assert lb[lb.definition != "rmsnorm_h4096"].geomean_speedup_vs_baseline.notna().any()
    assert any("rmsnorm_h4096: 2 solutions claim the author 'baseline' (torch_baseline, fast_claim)" in n
               for n in s.notes), s.notes


def test_many_authors_and_solutions(summary):
    lb = summary.leaderboard
    sub = lb[(lb.definition == "rmsnorm_h4096") & (lb.hardware == ds.H100)]
    assert set(sub.author) == {"baseline", "alice", "bob", "carol", ""}
    assert list(sub.solution[:2]) == ["triton_row", "triton_twin"]  # ordered by wins, then geomean


def test_notes_name_orphans_and_untested(summary):
    notes = "\n".join(summary.notes)
    assert "rmsnorm_h8192_untested: no traces" in notes
    assert "removed_definition: not in the dataset any more" in notes
    assert "deleted_solution: not in the dataset any more" in notes
    assert "no usable latency" in notes


def test_merging_two_paths_keeps_devices_apart(tmp_path, dataset_dir):
    ts = ds.build()
    cpu_only, gpu_only = TraceSet(), TraceSet()
    for part in (cpu_only, gpu_only):
        for d in ts.definitions.values():
            part.add_definition(d)
        for s in ts.all_solutions():
            part.add_solution(s)
    cpu_only.add_traces(t for t in ts.all_traces() if t.evaluation.hardware == ds.CPU)
    gpu_only.add_traces(t for t in ts.all_traces() if t.evaluation.hardware != ds.CPU)
    cpu_only.to_path(tmp_path / "cpu")
    gpu_only.to_path(tmp_path / "gpu")
    merged = summarize(load_paths([tmp_path / "cpu", tmp_path / "gpu"]))
    whole = summarize(load_paths([dataset_dir]))
    assert merged.totals == whole.totals
    # the same dataset passed twice is not counted twice
    assert summarize(load_paths([dataset_dir, dataset_dir])).totals["traces"] == 40
