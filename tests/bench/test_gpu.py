"""GPU-only evaluation tests (pytest -m gpu on the device machine)."""
from __future__ import annotations

from pathlib import Path
from typing import Set

import pytest

from flashinfer_bench.bench.client import evaluate_via_worker, ping_worker, shutdown_worker
from flashinfer_bench.bench.config import EvalConfig
from flashinfer_bench.bench.loader import _shim_build, build_solution
from flashinfer_bench.data import Definition, Trace, TraceSet

from .conftest import GOOD_VR, REDTEAM, make_solution, rms_definition, rms_workload
from .test_redteam import CASES, CRASHES

pytestmark = pytest.mark.gpu

# the side stream is caught either by the timed-output re-check (stale_output) or by the audit
# (background_work); if it ever PASSED it would have to carry background_work
GPU_ONLY = {
    "side_stream": (False, {"INCORRECT_NUMERICAL", "PASSED"}, {"background_work", "stale_output"}),
    "grab_all_memory": (False, {"RUNTIME_ERROR"}, None),
    "illegal_address": (False, {"RUNTIME_ERROR"}, None),
}


@pytest.fixture(scope="module")
def cuda_config(tmp_path_factory: pytest.TempPathFactory):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    d = tmp_path_factory.mktemp("gpu")
    cfg = EvalConfig(device="cuda:0", worker_dir=str(d / "w"), cache_dir=str(d / "cache"), timeout_s=120)
    yield cfg
    shutdown_worker("cuda:0", cfg)


def _flags(t: Trace) -> Set[str]:
    ev = t.evaluation
    return set((ev.correctness.extra or {}).get("flags", [])) if ev and ev.correctness else set()


def _eval(name: str, src: str, definition: Definition, cfg: EvalConfig, dps: bool = False, batch: int = 512) -> Trace:
    """Python solutions built in-process (see conftest.build): the evaluator path is the same."""
    sol = make_solution(name, src, definition, dps=dps)
    return evaluate_via_worker(definition, sol, rms_workload(batch), _shim_build(sol, Path(cfg.cache_dir)), cfg)


@pytest.mark.parametrize("name", sorted({**CASES, **GPU_ONLY}))
def test_redteam_on_gpu(name: str, cuda_config) -> None:
    d = rms_definition(4096, name="rmsnorm_gpu_redteam")
    dps, statuses, flag = {**CASES, **GPU_ONLY}[name]
    batch = 8192 if name == "side_stream" else 512
    t = _eval(f"redteam_{name}", (REDTEAM / f"{name}.py").read_text(), d, cuda_config, dps=dps, batch=batch)
    ev = t.evaluation
    assert ev.status.value in statuses, f"{name}: {ev.status.value}\n{ev.log}"
    want = {flag} if isinstance(flag, str) else (flag or set())
    if ev.status.value == "PASSED":
        assert "background_work" in _flags(t) and _flags(t) & want, f"{name} passed unflagged: {_flags(t)}"
    elif want and ev.correctness is not None:
        assert _flags(t) & want, (name, _flags(t))
    if name in CRASHES or name in ("grab_all_memory", "illegal_address"):
        ok = _eval("good_after", GOOD_VR, d, cuda_config)
        assert ok.evaluation.status.value == "PASSED", ok.evaluation.log


def test_timer_patch_and_reference_calls_on_gpu(cuda_config) -> None:
    d = rms_definition(4096, name="rmsnorm_gpu_redteam")
    # a solution that replaces timing functions fails, naming them (sandbox.guard, issue 9)
    t = _eval("redteam_timer_patch", (REDTEAM / "timer_patch.py").read_text(), d, cuda_config)
    assert t.evaluation.status.value == "RUNTIME_ERROR", t.evaluation.log
    assert "timer_patched" in t.evaluation.log and "time.perf_counter" in t.evaluation.log
    assert t.evaluation.performance is None
    t = _eval("redteam_calls_reference", (REDTEAM / "calls_reference.py").read_text(), d, cuda_config, batch=2048)
    assert t.evaluation.status.value == "PASSED"
    assert t.evaluation.performance.speedup_factor < 1.15, t.evaluation.performance


def test_anchor_dataset_is_correct_ranked_and_under_the_roofline(anchor_dataset: Path, cuda_config) -> None:
    ts = TraceSet.from_path(anchor_dataset)
    lat = {}
    for dname, definition in ts.definitions.items():
        for sol in ts.solutions_for(dname):
            b = build_solution(sol, definition, Path(cuda_config.cache_dir))
            for wl in ts.workloads_for(dname):
                t = evaluate_via_worker(definition, sol, wl, b, cuda_config)
                ev = t.evaluation
                assert ev.status.value == "PASSED", (sol.name, wl.workload.uuid, ev.log)
                x = ev.correctness.extra
                assert x["timer"] == "cuda_event" and x["gate_mode"] == "gated", x
                # above 100% happens at mid sizes: up to ~50 MB of output writes sit in L2 when the
                # kernel ends (the peak is a 512 MB copy); far above it is a wrong byte count
                assert x["pct_of_peak_bw"] < 125, x
                assert "below_roofline_floor" not in x["flags"]
                lat[(sol.name, wl.workload.axes["batch_size"])] = ev.performance.latency_ms
    for batch in (1, 8, 32, 128, 512, 2048, 8192):
        assert lat[("rmsnorm_triton_row", batch)] < lat[("rmsnorm_torch_fn", batch)], batch


def test_same_evaluation_twice_agrees(cuda_config) -> None:
    d = rms_definition(4096, name="rmsnorm_gpu_repeat")
    a = _eval("repeat_vr", GOOD_VR, d, cuda_config, batch=2048).evaluation.performance.latency_ms
    b = _eval("repeat_vr", GOOD_VR, d, cuda_config, batch=2048).evaluation.performance.latency_ms
    assert abs(a - b) <= max(0.1 * min(a, b), 0.5e-3), (a, b)


UNUSED_INPUT_REF = """import torch


def run(x, pad, weight, eps):
    xf = x.to(torch.float32)
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (xf * rstd * weight.to(torch.float32)).to(torch.float16)
"""
UNUSED_INPUT_SOL = """import torch


def run(x, pad, weight, eps):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
"""


def test_time_below_the_physical_floor_is_flagged(cuda_config) -> None:
    """A definition that declares a large input nobody reads: any correct solution 'beats' DRAM."""
    base = rms_definition(4096).model_dump()
    base["name"] = "rmsnorm_with_unread_input"
    # 512 MiB unread: a quarter of its floor (>= 30 us at 4.8 TB/s) is well above the ~10 us call, on
    # any GPU (128 MiB was not on the H200: the runner flagged it, the supervisor's quarter did not)
    base["axes"]["pad"] = {"type": "const", "value": 1 << 28}
    base["inputs"] = {"x": base["inputs"]["x"], "pad": {"shape": ["pad"], "dtype": "float16"},
                      "weight": base["inputs"]["weight"], "eps": base["inputs"]["eps"]}
    base["reference"] = UNUSED_INPUT_REF
    d = Definition.model_validate(base)
    t = _eval("ignores_pad", UNUSED_INPUT_SOL, d, cuda_config, batch=8)
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log
    assert "below_roofline_floor" in ev.correctness.extra["flags"] and ev.correctness.extra["suspect"]
    assert "implausible_latency" in ev.correctness.extra["flags"], "the supervisor's own floor check"


def test_worker_survives_and_reports_environment(cuda_config) -> None:
    info = ping_worker("cuda:0", cuda_config, spawn=True)
    assert info and info["env"]["hardware"].startswith("NVIDIA")
    assert info["env"]["sm_count"] > 0 and info["env"]["l2_bytes"] > 0


def test_triton_kernel_jit_compiled_in_the_confined_runner(cuda_config) -> None:
    """A shape whose Triton config the build did not warm up is compiled at run time inside the
    confined runner (cache copy in scratch, ptxas and the launcher's C compiler run there)."""
    repo = Path(__file__).resolve().parents[2]
    ts = TraceSet.from_path(repo / "dataset")
    definition = ts.definitions["gemm_n4096_k4096"]
    sol = next(s for s in ts.solutions_for("gemm_n4096_k4096") if s.name == "gemm_triton")
    build = build_solution(sol, definition, Path(cuda_config.cache_dir))
    for m in (64, 512):
        wl = ts.workloads_for("gemm_n4096_k4096")[0].workload.model_copy(deep=True)
        wl.axes["M"] = m
        wl.uuid = f"jit-m{m}"
        t = evaluate_via_worker(definition, sol, wl, build, cuda_config)
        assert t.evaluation.status.value == "PASSED", (m, t.evaluation.log)


# an honest solution with a big temporary workspace: 40% of the GPU, freed (cached by torch's
# allocator) before it returns
BIG_WORKSPACE = """import torch

_seen = []


def run(x, weight, eps):
    if not _seen:
        free, total = torch.cuda.mem_get_info()
        ws = torch.empty(int(0.4 * total), dtype=torch.uint8, device=x.device)
        ws.fill_(1)
        del ws
        _seen.append(1)
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
"""


def test_runners_of_other_solutions_leave_gpu_memory(cuda_config) -> None:
    # each solution has its own runner; a parked runner once kept 45 GiB cached and the next
    # solution's reference ran out of memory (charged to that solution)
    d = rms_definition(4096, name="rmsnorm_gpu_memory")
    for i in range(3):
        t = _eval(f"big_workspace_{i}", BIG_WORKSPACE.replace("_seen = []", f"_seen = []  # {i}"), d, cuda_config)
        assert t.evaluation.status.value == "PASSED", t.evaluation.log


OOM_REF = """import torch


def run(x, weight, eps):
    # more device memory than any GPU has: the reference cannot run on this machine
    torch.empty(1 << 46, dtype=torch.uint8, device=x.device)
    return x
"""


def test_a_reference_out_of_device_memory_is_the_machines_error(cuda_config, tmp_path: Path) -> None:
    """Issue 17: a reference that cannot get its device memory is the environment's failure, not the
    solution's: the trace is charged to the environment, and `run` writes nothing into the dataset
    and exits 4 with one message."""
    import json
    import os
    import subprocess
    import sys

    from flashinfer_bench.data.charge import ENVIRONMENT_ERROR, charged_party

    d = Definition.model_validate({**rms_definition(256, name="rms_oom_ref").model_dump(mode="json"),
                                   "reference": OOM_REF})
    sol = make_solution("honest_rms", GOOD_VR, d)
    t = evaluate_via_worker(d, sol, rms_workload(8), _shim_build(sol, Path(cuda_config.cache_dir)), cuda_config)
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR" and ev.log.startswith(ENVIRONMENT_ERROR), ev.log[:2000]
    assert charged_party(t) == "environment"

    ds = tmp_path / "ds"
    for sub, name, body in (("definitions/rmsnorm", "rms_oom_ref.json", d.model_dump_json(indent=2)),
                            ("solutions/t/rmsnorm/rms_oom_ref", "honest_rms.json", sol.model_dump_json(indent=2)),
                            ("workloads/rmsnorm", "rms_oom_ref.jsonl",
                             json.dumps({"definition": d.name, "workload": rms_workload(8).model_dump(mode="json"),
                                         "solution": None, "evaluation": None}) + "\n")):
        (ds / sub).mkdir(parents=True, exist_ok=True)
        (ds / sub / name).write_text(body)
    env = {**os.environ, "FIB_CACHE_PATH": str(tmp_path / "cache"), "FIB_WORKER_DIR": str(tmp_path / "w")}
    p = subprocess.run([sys.executable, "-m", "flashinfer_bench", "run", "--local", str(ds), "--device", "cuda",
                        "--results", str(tmp_path / "results")], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 4, p.stderr[-3000:]
    assert "because of this machine" in p.stderr and "Traceback" not in p.stderr, p.stderr[-3000:]
    assert not any((ds / "traces").rglob("*.jsonl")) if (ds / "traces").exists() else True
