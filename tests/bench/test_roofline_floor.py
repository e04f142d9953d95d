"""The physical floor flags a latency no honest kernel can reach, not one that beats our own
measured copy: on the H200 a fused RMSNorm moved 4.2 TB/s where the measured copy peak was 3.8
and the floor (measured x 1.1) flagged an honest anchor solution `below_roofline_floor`."""
from __future__ import annotations

from flashinfer_bench.bench.roofline import roofline
from flashinfer_bench.data.devices import floor_gbps

from tests.bench.conftest import rms_definition

H200 = {"peak_gbps": 3800.0, "peak_tflops": 700.0, "device_name": "NVIDIA H200"}


def _latency_ms_at(gbps: float, nbytes: int) -> float:
    return nbytes / (gbps * 1e9) * 1e3


def test_an_honest_kernel_above_the_measured_peak_is_not_flagged() -> None:
    d = rms_definition(4096)
    axes = {"batch_size": 8192}
    nbytes = d.bytes_moved(axes)
    honest = roofline(d, axes, _latency_ms_at(4200.0, nbytes), H200, apply_floor=True)
    assert honest["flags"] == [] and honest["pct_of_peak_bw"] > 100  # above our copy, below the datasheet
    forged = roofline(d, axes, _latency_ms_at(9000.0, nbytes), H200, apply_floor=True)
    assert forged["flags"] == ["below_roofline_floor"]


def test_an_unknown_device_keeps_its_measured_peak() -> None:
    assert floor_gbps(3800.0, "NVIDIA H200") == 4800.0
    assert floor_gbps(3800.0, "Some Future GPU") == 3800.0
    assert floor_gbps(None, "NVIDIA H200") == 4800.0
    assert floor_gbps(None, None) is None
