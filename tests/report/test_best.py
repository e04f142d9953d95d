"""`report best`: the fastest correct solution per workload, and whether the win is real."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from flashinfer_bench.report import best_table, load_paths, summarize, within_noise

from . import dataset as ds


@pytest.fixture(scope="module")
def best(dataset_dir):
    return summarize(load_paths([dataset_dir])).best


def pick(best, definition, hardware, workload):
    r = best[(best.definition == definition) & (best.hardware == hardware) & (best.workload == workload)]
    assert len(r) == 1
    return r.iloc[0]


def test_tie_inside_noise_names_both(best):
    r = pick(best, "rmsnorm_h4096", ds.H100, "rms-b64")
    assert r.winner == "triton_row" and r.tie_with == "triton_twin"
    assert r.verdict.startswith("tie")
    assert r.runner_up_ratio == pytest.approx(1.01)
    assert r.max_abs_error == pytest.approx(2e-4) and r.max_rel_error == pytest.approx(1e-3)
    assert "p10-p90" in r.spread and r.samples == 50


def test_clear_win_only_correct_and_no_spread(best):
    assert pick(best, "rmsnorm_h4096", ds.CPU, "rms-b8").verdict == "clear win"
    only = pick(best, "rmsnorm_h4096", ds.CPU, "rms-b512")
    assert only.winner == "torch_baseline" and only.verdict == "only correct solution"
    old = pick(best, "rmsnorm_h4096", ds.H200, "rms-b1")  # 0.1.2-style traces carry no spread
    assert old.winner == "triton_row" and old.verdict == "no spread recorded" and old.spread == ""


def test_nan_latency_never_wins(best):
    r = pick(best, "gemm_n256_k256", ds.H100, "gemm-m128")
    assert r.winner == "gemm_torch" and r.verdict == "only correct solution"


def test_no_correct_solution_row():
    ts = ds.build()
    frame_only_failed = summarize(ts).frame
    frame_only_failed = frame_only_failed[frame_only_failed.solution == "cuda_vec"]
    b = best_table(frame_only_failed)
    assert (b.verdict == "no correct solution").all() and (b.winner == "").all()
    assert b["flags"].str.contains("COMPILE_ERROR").all()


def _row(lat, p10=math.nan, p90=math.nan, iqr=math.nan, rel=math.nan):
    return pd.Series({"latency_ms": lat, "latency_ms_p10": p10, "latency_ms_p90": p90, "iqr_ms": iqr, "rel_iqr": rel})


@pytest.mark.parametrize("a,b,expect", [
    (_row(1.0, 0.9, 1.1), _row(1.05, 1.0, 1.2), True),        # p10-p90 overlap
    (_row(1.0, 0.99, 1.01), _row(1.2, 1.19, 1.21), False),    # disjoint
    (_row(1.0, iqr=0.05), _row(1.08, iqr=0.05), True),         # median +- IQR overlap
    (_row(1.0, iqr=0.01), _row(1.08, iqr=0.01), False),
    (_row(1.0, rel=0.10), _row(1.05), True),                   # diff 5% < rel_iqr 10%
    (_row(1.0, rel=0.01), _row(1.05), False),
    (_row(1.0), _row(1.5), None),                              # nothing known
])
def test_within_noise_rules(a, b, expect):
    assert within_noise(a, b) is expect


def test_a_suspect_trace_never_wins(tmp_path):
    """The fastest PASSED trace is marked suspect (its latency below the physical floor): the next
    correct one wins; where only suspect traces are left there is no winner, and the row says so."""
    from tests.apply.helpers import trace, write_dataset

    forged = trace("norm_a", 1, 0.0001)
    forged["evaluation"]["correctness"]["extra"] = {"suspect": True, "flags": ["below_roofline_floor"]}
    alone = trace("norm_a", 2, 0.0001)
    alone["evaluation"]["correctness"]["extra"] = {"suspect": True, "flags": ["timing_disputed"]}
    root = write_dataset(tmp_path / "ds", ["norm_a", "norm_b"], [forged, trace("norm_b", 1, 0.01), alone])
    b = summarize(load_paths([root])).best
    one = b[b.workload == "b1"].iloc[0]
    assert one.winner == "norm_b" and one.verdict == "only correct solution"
    two = b[b.workload == "b2"].iloc[0]
    assert two.winner == "" and two.verdict == "no correct solution" and "norm_a PASSED (suspect)" in two["flags"]
