"""A small dataset built from the data models: passing, failing, noisy, tied and multi-device
traces, FlashInfer-Bench 0.1.2-style traces without extras, and orphans."""
from __future__ import annotations

import math
from typing import Any, Dict, Optional

from flashinfer_bench.data import (
    AxisConst, AxisVar, BuildSpec, Correctness, Definition, DType, Environment, Evaluation,
    EvaluationStatus, Performance, Solution, SourceFile, TensorSpec, Trace, TraceSet, Workload,
)

H100 = "NVIDIA H100 80GB HBM3"
H200 = "NVIDIA H200"
CPU = "CPU Intel(R) Xeon(R) Platinum"
BATCHES = (1, 8, 64, 512)

REF = "import torch\n\ndef run(x, weight, eps):\n    return x * weight\n"


def rmsnorm_def(name: str = "rmsnorm_h4096") -> Definition:
    return Definition(
        name=name, op_type="rmsnorm",
        axes={"batch_size": AxisVar(), "hidden_size": AxisConst(value=4096)},
        inputs={"x": TensorSpec(shape=["batch_size", "hidden_size"], dtype=DType.FLOAT16),
                "weight": TensorSpec(shape=["hidden_size"], dtype=DType.FLOAT16),
                "eps": TensorSpec(shape=None, dtype=DType.FLOAT32)},
        outputs={"out": TensorSpec(shape=["batch_size", "hidden_size"], dtype=DType.FLOAT16)},
        reference=REF, description="RMSNorm over 4096 features",
    )


def gemm_def() -> Definition:
    return Definition(
        name="gemm_n256_k256", op_type="gemm",
        axes={"M": AxisVar(), "N": AxisConst(value=256), "K": AxisConst(value=256)},
        inputs={"A": TensorSpec(shape=["M", "K"], dtype=DType.BFLOAT16),
                "B": TensorSpec(shape=["N", "K"], dtype=DType.BFLOAT16)},
        outputs={"C": TensorSpec(shape=["M", "N"], dtype=DType.BFLOAT16)},
        reference="import torch\n\ndef run(A, B):\n    return A @ B.T\n", flops="2*M*N*K",
    )


def solution(name: str, definition: str, author: str, language: str = "triton") -> Solution:
    return Solution(
        name=name, definition=definition, author=author,
        spec=BuildSpec(language=language, target_hardware=["cuda"], entry_point="main.py::run"),
        sources=[SourceFile(path="main.py", content="def run(*a):\n    pass\n")],
    )


def passed(definition: str, sol: str, wl: Workload, hw: str, lat: float, ref: float,
           spread: Optional[float] = None, extra: Optional[Dict[str, Any]] = None,
           env_extra: Optional[Dict[str, Any]] = None) -> Trace:
    """A PASSED trace; spread (relative) adds our extras (p10/p90, IQR, samples)."""
    ex = None
    if spread is not None:
        ex = {"samples": 50, "latency_ms_p10": lat * (1 - spread), "latency_ms_p90": lat * (1 + spread),
              "iqr_ms": lat * spread, "rel_iqr": spread, "noisy": spread > 0.1, "timer": "cuda_event"}
        ex.update(extra or {})
    elif extra:
        ex = dict(extra)
    env = Environment(hardware=hw, libs={"torch": "2.11.0", "triton": "3.6.0"}, **(env_extra or {}))
    ev = Evaluation(
        status=EvaluationStatus.PASSED, environment=env, log="",
        correctness=Correctness(max_relative_error=1e-3, max_absolute_error=2e-4, extra=ex),
        performance=Performance(latency_ms=lat, reference_latency_ms=ref,
                                speedup_factor=(ref / lat if lat and lat == lat and lat > 0 else 0.0)),
    )
    return Trace(definition=definition, workload=wl, solution=sol, evaluation=ev)


def failed(definition: str, sol: str, wl: Workload, hw: str, status: EvaluationStatus, log: str) -> Trace:
    kw: Dict[str, Any] = {}
    if status == EvaluationStatus.INCORRECT_NUMERICAL:
        kw["correctness"] = Correctness(max_relative_error=0.5, max_absolute_error=3.0)
    ev = Evaluation(status=status, environment=Environment(hardware=hw), log=log, **kw)
    return Trace(definition=definition, workload=wl, solution=sol, evaluation=ev)


def build() -> TraceSet:
    ts = TraceSet()
    rms, gemm = rmsnorm_def(), gemm_def()
    ts.add_definition(rms)
    ts.add_definition(gemm)
    ts.add_definition(rmsnorm_def("rmsnorm_h8192_untested"))
    for name, author in (("torch_baseline", "baseline"), ("triton_row", "alice"), ("cuda_vec", "bob"),
                         ("triton_twin", "carol")):
        ts.add_solution(solution(name, rms.name, author, "cuda" if name == "cuda_vec" else "triton"))
    ts.add_solution(solution("gemm_triton", gemm.name, "alice"))
    ts.add_solution(solution("gemm_torch", gemm.name, "baseline", "python"))
    ts.add_solution(solution("never_run", "rmsnorm_h8192_untested", "dave"))
    wls = {b: Workload(axes={"batch_size": b}, inputs={}, uuid=f"rms-b{b}") for b in BATCHES}
    for b, w in wls.items():
        ts.add_workload(w, definition=rms.name)
    ts.add_workload(Workload(axes={"batch_size": 4}, uuid="untested-b4"), definition="rmsnorm_h8192_untested")
    h100_env = {"device": "cuda:0", "sm_count": 132, "clocks_start": {"sm": 1980, "mem": 2619}}
    for b, w in wls.items():
        ref = 0.02 + b * 0.0005
        # H100: our evaluator's traces, with spread and measured peak
        ts.add_trace(passed(rms.name, "torch_baseline", w, H100, 0.010 + b * 0.0002, ref, 0.03,
                            {"peak_gbps": 3000.0}, h100_env))
        ts.add_trace(passed(rms.name, "triton_row", w, H100, 0.004 + b * 0.0001, ref, 0.02,
                            {"peak_gbps": 3000.0}, h100_env))
        # triton_twin is within noise of triton_row at every batch (a tie)
        ts.add_trace(passed(rms.name, "triton_twin", w, H100, (0.004 + b * 0.0001) * 1.01, ref, 0.02,
                            {"peak_gbps": 3000.0}, h100_env))
        ts.add_trace(failed(rms.name, "cuda_vec", w, H100, EvaluationStatus.COMPILE_ERROR,
                            "kernel.cu(12): error: identifier \"__shfl_sync_x\" is undefined\n<b>not html</b>"))
        # H200: FlashInfer-Bench 0.1.2 style, no extras at all
        ts.add_trace(passed(rms.name, "torch_baseline", w, H200, 0.009 + b * 0.00015, ref * 0.8))
        ts.add_trace(passed(rms.name, "triton_row", w, H200, 0.003 + b * 0.00008, ref * 0.8))
        # CPU: slower, one numerical failure
        cpu_status_fail = b == 512
        if cpu_status_fail:
            ts.add_trace(failed(rms.name, "triton_row", w, CPU, EvaluationStatus.INCORRECT_NUMERICAL,
                                "max abs error 3.0 > atol 0.01"))
        else:
            ts.add_trace(passed(rms.name, "triton_row", w, CPU, 0.5 + b * 0.01, 1.0 + b * 0.02, 0.05,
                                env_extra={"device": "cpu"}))
        ts.add_trace(passed(rms.name, "torch_baseline", w, CPU, 0.9 + b * 0.02, 1.0 + b * 0.02, 0.05,
                            env_extra={"device": "cpu"}))
    # gemm on H100 only, with a NaN latency and a timeout
    gw = {m: Workload(axes={"M": m}, uuid=f"gemm-m{m}") for m in (16, 128, 1024)}
    for m, w in gw.items():
        ts.add_workload(w, definition=gemm.name)
        ts.add_trace(passed(gemm.name, "gemm_torch", w, H100, 0.01 + m * 1e-5, 0.01 + m * 1e-5, 0.01))
        if m == 128:
            ts.add_trace(passed(gemm.name, "gemm_triton", w, H100, math.nan, 0.02))
        elif m == 1024:
            ts.add_trace(failed(gemm.name, "gemm_triton", w, H100, EvaluationStatus.TIMEOUT, "timed out after 300 s"))
        else:
            ts.add_trace(passed(gemm.name, "gemm_triton", w, H100, 0.005, 0.01 + m * 1e-5, 0.01))
    # orphans: a solution and a definition that no longer exist
    ts.add_trace(passed(rms.name, "deleted_solution", wls[8], H100, 0.02, 0.03))
    ts.add_trace(passed("removed_definition", "old_sol", Workload(axes={"n": 3}, uuid="gone-1"), H100, 0.1, 0.2))
    return ts


# ---- wide: long names, many solutions, workloads with four axes (what has to fit 100 columns)
LONG_HW = "NVIDIA H100 80GB HBM3 (node gpu-cluster-a17-rack-04, driver 580.65.06, CUDA 13.0)"


def paged_def() -> Definition:
    return Definition(
        name="gqa_paged_decode_h32_kv8_d128_ps1_with_a_rather_long_definition_name", op_type="gqa_paged",
        axes={"batch_size": AxisVar(), "num_pages": AxisVar(), "len_indptr": AxisVar(), "num_kv_indices": AxisVar(),
              "num_qo_heads": AxisConst(value=32)},
        inputs={"q": TensorSpec(shape=["batch_size", "num_qo_heads"], dtype=DType.BFLOAT16),
                "kv_indptr": TensorSpec(shape=["len_indptr"], dtype=DType.INT32),
                "kv_indices": TensorSpec(shape=["num_kv_indices"], dtype=DType.INT32),
                "k_cache": TensorSpec(shape=["num_pages", "num_qo_heads"], dtype=DType.BFLOAT16)},
        outputs={"out": TensorSpec(shape=["batch_size", "num_qo_heads"], dtype=DType.BFLOAT16)},
        reference="import torch\n\ndef run(q, kv_indptr, kv_indices, k_cache):\n    return q\n",
    )


SPEEDUPS = (0.0049, 0.03, 0.5, 0.97, 1.0, 1.7, 3.3, 12.0, 31.0, 250.0)


def wide() -> TraceSet:
    """One definition with four var axes, ten solutions with long names (speedups 0.0049x to
    250x, one failing on two workloads), on a device with a long name."""
    ts = TraceSet()
    d = paged_def()
    ts.add_definition(d)
    sols = [f"{d.name[:20]}_solution_variant_{i:02d}_{lang}" for i, lang in enumerate(["triton", "cuda"] * 5)]
    for s in sols:
        ts.add_solution(solution(s, d.name, "someone_with_a_long_author_name"))
    for b, pages in ((1, 32), (16, 20000), (64, 80000), (64, 300000)):
        w = Workload(axes={"batch_size": b, "num_pages": pages, "len_indptr": b + 1, "num_kv_indices": b * 256},
                     uuid=f"uuid-{b}-{pages}-0123456789abcdef")
        ts.add_workload(w, definition=d.name)
        ref = 0.002 + b * 0.0001
        for s, sp in zip(sols, SPEEDUPS):
            if sp == 31.0 and b == 64:
                ts.add_trace(failed(d.name, s, w, LONG_HW, EvaluationStatus.RUNTIME_ERROR, "CUDA error: misaligned address"))
                continue
            ts.add_trace(passed(d.name, s, w, LONG_HW, ref / sp, ref, 0.02, {"peak_gbps": 3000.0}))
    return ts
