"""Roofline view: achieved GB/s and TFLOP/s and the share of the device's peak."""
from __future__ import annotations

import math

import pytest

from flashinfer_bench.report import datasheet_peak_gbps, load_paths, roofline_table, summarize

from . import dataset as ds


@pytest.fixture(scope="module")
def roof(dataset_dir):
    return roofline_table(summarize(load_paths([dataset_dir])).frame)


def pick(roof, definition, hardware, solution, workload):
    r = roof[(roof.definition == definition) & (roof.hardware == hardware) & (roof.solution == solution) & (roof.workload == workload)]
    assert len(r) == 1
    return r.iloc[0]


def test_computed_from_definition_and_latency(roof):
    r = pick(roof, "rmsnorm_h4096", ds.H100, "triton_row", "rms-b64")
    nbytes = (64 * 4096 * 2) * 2 + 4096 * 2  # x and out fp16, weight fp16; eps is a scalar
    assert r.bytes == nbytes
    lat = 0.004 + 64 * 0.0001
    assert r.achieved_gbps == pytest.approx(nbytes / (lat * 1e-3) / 1e9)
    assert r.peak_gbps == 3000.0 and r.peak_source == "measured"  # from the traces' extras
    assert r.pct_of_peak_bw == pytest.approx(100 * r.achieved_gbps / 3000.0)


def test_tflops_when_the_definition_counts_flops(roof):
    r = pick(roof, "gemm_n256_k256", ds.H100, "gemm_triton", "gemm-m16")
    assert r.flops == 2 * 16 * 256 * 256
    assert r.achieved_tflops == pytest.approx(r.flops / 0.005e-3 / 1e12)
    assert "rmsnorm" not in r.definition


def test_peak_from_datasheet_or_blank(roof):
    h200 = pick(roof, "rmsnorm_h4096", ds.H200, "triton_row", "rms-b8")
    assert h200.peak_source == "datasheet" and h200.peak_gbps == datasheet_peak_gbps(ds.H200) == 4800.0
    cpu = pick(roof, "rmsnorm_h4096", ds.CPU, "triton_row", "rms-b8")
    assert math.isnan(cpu.peak_gbps) and math.isnan(cpu.pct_of_peak_bw) and cpu.peak_source == ""
    assert cpu.achieved_gbps > 0


def test_extras_win_over_computed_values():
    ts = ds.build()
    d = ts.get_definition("rmsnorm_h4096")
    wl = ts.workloads_for("rmsnorm_h4096")[0].workload
    t = ds.passed(d.name, "triton_row", wl, "NVIDIA H100 80GB HBM3", 0.01, 0.02, 0.01,
                  {"bytes": 1000, "achieved_gbps": 123.0, "peak_gbps": 3200.0, "pct_of_peak_bw": 3.84,
                   "flags": ["below_roofline_floor"], "suspect": True})
    from flashinfer_bench.data import TraceSet

    one = TraceSet()
    one.add_definition(d)
    one.add_trace(t)
    r = roofline_table(summarize(one).frame).iloc[0]
    assert (r.bytes, r.achieved_gbps, r.peak_gbps, r.pct_of_peak_bw) == (1000, 123.0, 3200.0, 3.84)
    assert "below_roofline_floor" in r["flags"]


def test_above_peak_is_flagged():
    ts = ds.build()
    d = ts.get_definition("rmsnorm_h4096")
    wl = ts.workloads_for("rmsnorm_h4096")[-1].workload  # batch 512: 8.4 MB
    from flashinfer_bench.data import TraceSet

    one = TraceSet()
    one.add_definition(d)
    one.add_trace(ds.passed(d.name, "cheat", wl, ds.H200, 1e-4, 0.1))  # 84 TB/s on a 4.8 TB/s device
    r = roofline_table(summarize(one).frame).iloc[0]
    assert r.pct_of_peak_bw > 100 and "above peak bandwidth" in r["flags"]


@pytest.mark.parametrize("name,gbps", [
    ("NVIDIA H100 80GB HBM3", 3350.0), ("NVIDIA H100 PCIe", 2000.0), ("NVIDIA H200", 4800.0),
    ("NVIDIA H200 NVL", 4800.0), ("CPU AMD EPYC 7763", None), ("", None),
])
def test_datasheet_lookup(name, gbps):
    assert datasheet_peak_gbps(name) == gbps
