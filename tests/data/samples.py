"""Traces of every status the way our evaluator writes them (extras included), for tests."""
from __future__ import annotations

import math
from typing import List

from flashinfer_bench.data import Correctness, Environment, Evaluation, Performance, Trace, Workload

ENV = Environment(
    hardware="NVIDIA H100 80GB HBM3",
    libs={"torch": "2.11.0", "triton": "3.6.0", "cuda": "12.8", "flashinfer_bench": "0.2.0"},
    device="cuda:0",
    device_index=0,
    gpu_uuid="GPU-0000",
    sm_count=132,
    clocks_start={"sm": 1980, "mem": 2619},
    hostname="node1",
    start_time="2026-01-09T10:30:00Z",
    end_time="2026-01-09T10:30:02Z",
)

EXTRA = {
    "seed": 1234, "num_trials": 3, "timer": "cuda_event", "samples": 200,
    "latency_ms_p10": 0.0101, "latency_ms_p90": 0.0109, "iqr_ms": 0.0004, "rel_iqr": 0.04,
    "noisy": False, "reference_iqr_ms": 0.001, "reference_samples": 100, "bytes": 16785408,
    "flops": None, "achieved_gbps": 1600.5, "achieved_tflops": None, "peak_gbps": 3350.0,
    "peak_tflops": 989.0, "pct_of_peak_bw": 47.8, "pct_of_peak_flops": None, "suspect": False,
    "flags": ["noisy"], "rtol": 0.01, "atol": 0.01, "harness_version": "1", "eval_seconds": 2.5,
}


def traces_of_every_status(definition: str, workload: Workload, solution: str) -> List[Trace]:
    """One trace per status we produce: PASSED (with extras), INCORRECT_NUMERICAL (finite and
    inf/NaN errors), RUNTIME_ERROR, COMPILE_ERROR, TIMEOUT."""
    def ev(**kw) -> Evaluation:
        return Evaluation(environment=ENV, timestamp="2026-01-09T10:30:00Z", **kw)

    evaluations = [
        ev(status="PASSED", log="ok",
           correctness=Correctness(max_relative_error=1.2e-5, max_absolute_error=3.4e-4, extra=EXTRA),
           performance=Performance(latency_ms=0.0105, reference_latency_ms=0.045, speedup_factor=4.29)),
        ev(status="INCORRECT_NUMERICAL", log="max abs error 0.5 > atol",
           correctness=Correctness(max_relative_error=0.7, max_absolute_error=0.5, extra={"seed": 1})),
        ev(status="INCORRECT_NUMERICAL", log="output has NaN",
           correctness=Correctness(max_relative_error=math.nan, max_absolute_error=math.inf)),
        ev(status="RUNTIME_ERROR", log="Traceback (most recent call last):\n  ...\nRuntimeError: boom"),
        ev(status="COMPILE_ERROR", log="kernel.cu(3): error: expected a ';'"),
        ev(status="TIMEOUT", log="no result after 300 s"),
    ]
    return [Trace(definition=definition, workload=workload, solution=solution, evaluation=e) for e in evaluations]
