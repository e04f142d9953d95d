"""GPU paths of apply and tracing (run with `pytest -m gpu` on the GPU machine)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

import flashinfer_bench as fb
from flashinfer_bench import TracingConfig, apply
from flashinfer_bench.apply import ApplyConfig, dispatch_table, hardware_name, stats

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():  # collected on CPU machines, skipped there
    pytest.skip("needs a CUDA GPU", allow_module_level=True)


@apply("rmsnorm_d4096")
def rmsnorm(x, weight, eps):
    xf = x.to(torch.float32)
    return (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.to(torch.float32)).to(torch.float16)


def _trace(sol: str, batch: int, latency_ms: float, hw: str) -> dict:
    return {
        "definition": "rmsnorm_d4096",
        "workload": {"uuid": f"gpu-b{batch}", "axes": {"batch_size": batch}, "inputs": {}},
        "solution": sol,
        "evaluation": {
            "status": "PASSED", "environment": {"hardware": hw, "libs": {}}, "timestamp": "2026-01-01T00:00:00Z",
            "log": "", "correctness": {"max_relative_error": 0.0, "max_absolute_error": 0.0},
            "performance": {"latency_ms": latency_ms, "reference_latency_ms": 0.01, "speedup_factor": 0.01 / latency_ms},
        },
    }


def test_gpu_solutions_in_both_conventions(tmp_path: Path, example_dataset: Path) -> None:
    """Triton (DPS) wins batch 8, the CUDA kernel (DPS) batch 64, PyTorch batch 1."""
    ds = tmp_path / "ds"
    shutil.copytree(example_dataset / "definitions", ds / "definitions")
    shutil.copytree(example_dataset / "solutions", ds / "solutions")
    hw = hardware_name("cuda")[1]
    lines = [_trace("rmsnorm_torch", 1, 0.001, hw), _trace("rmsnorm_triton", 8, 0.001, hw), _trace("rmsnorm_cuda", 64, 0.001, hw)]
    (ds / "traces" / "rmsnorm").mkdir(parents=True)
    (ds / "traces" / "rmsnorm" / "rmsnorm_d4096.jsonl").write_text("".join(json.dumps(t) + "\n" for t in lines))
    w = torch.rand(4096, device="cuda", dtype=torch.float16) + 0.5
    with fb.enable_apply(ds, ApplyConfig(cache_dir=tmp_path / "cache", on_miss="fallback")) as rt:
        assert not rt.failed, rt.failed
        assert dispatch_table()["rmsnorm_d4096"] == {(1,): "rmsnorm_torch", (8,): "rmsnorm_triton", (64,): "rmsnorm_cuda"}
        for b in (1, 8, 64, 3):
            x = torch.randn(b, 4096, device="cuda", dtype=torch.float16)
            want = rmsnorm.__wrapped_fallback__(x, w, 1e-6)
            torch.testing.assert_close(rmsnorm(x, w, 1e-6), want, atol=2e-2, rtol=2e-2)
            out = torch.empty_like(want)
            assert rmsnorm(x, w, 1e-6, out) is None
            torch.testing.assert_close(out, want, atol=2e-2, rtol=2e-2)
        # CPU tensors never reach a GPU solution
        assert rmsnorm(torch.randn(8, 4096, dtype=torch.float16), w.cpu(), 1e-6).device.type == "cpu"
        got = stats(by_axes=True)["rmsnorm_d4096"]
    assert got[(1,)] == {"rmsnorm_torch": 2}
    assert got[(8,)] == {"rmsnorm_triton": 2, "fallback": 1}
    assert got[(64,)] == {"rmsnorm_cuda": 2}
    assert got[(3,)] == {"fallback": 2}


def test_dump_all_snapshots_cuda_tensors_at_call_time(tmp_path: Path, example_dataset: Path) -> None:
    from safetensors.torch import load_file

    ds = tmp_path / "ds"
    shutil.copytree(example_dataset / "definitions", ds / "definitions")
    w = torch.rand(4096, device="cuda", dtype=torch.float16)
    for snapshot in ("pinned", "device_clone"):
        cfg = TracingConfig(tensor_dump_policy="dump_all", dedup_policy="keep_all", snapshot=snapshot)
        saved = []
        with fb.enable_tracing({"rmsnorm_d4096": cfg}, dataset_dir=ds):
            for b in (1, 8, 300):
                x = torch.randn(b, 4096, device="cuda", dtype=torch.float16)
                saved.append(x.cpu())
                rmsnorm(x, w, 1e-6)
                x.fill_(7)  # the caller overwrites its buffer right away, on the same stream
        lines = [json.loads(l) for l in (ds / "workloads" / "rmsnorm" / "rmsnorm_d4096.jsonl").read_text().splitlines()]
        for line, want in zip(lines[-3:], saved):
            ref = line["workload"]["inputs"]["x"]
            got = load_file(str(ds / ref["path"]))["x"]
            assert torch.equal(got, want), snapshot
