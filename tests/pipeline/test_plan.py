"""The parse-time plan (no Snakemake run): validation through data/validate.py, CPU size limits,
the benchmark rule's precomputed params, and when GPU workers are pre-started."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

from flashinfer_bench.bench.skips import cpu_skip_reason
from flashinfer_bench.pipeline.plan import benchmark_params, build_plan
from flashinfer_bench.pipeline.prestart import prestart_workers, should_prestart

from .harness import definition, solution, workload_line, write_dataset


def _plan(ds: Path, **kw):
    return build_plan(ds, device="cpu", cpu_limits=kw.pop("cpu_limits", {}), **kw)


def test_invalid_workloads_are_dropped_with_validate_messages(tmp_path):
    ds = write_dataset(tmp_path, batches=(1, 4))
    wl = ds / "workloads/rmsnorm/rms_h256.jsonl"
    bad_const = json.loads(workload_line("rms_h256", 8))
    bad_const["workload"]["uuid"] = "bad_const"
    bad_const["workload"]["axes"]["hidden_size"] = 128
    missing = json.loads(workload_line("rms_h256", 8))
    missing["workload"]["uuid"] = "missing_axis"
    del missing["workload"]["axes"]["batch_size"]
    unknown = json.loads(workload_line("rms_h256", 8))
    unknown["workload"]["uuid"] = "unknown_input"
    unknown["workload"]["inputs"]["y"] = {"type": "random"}
    with open(wl, "a") as f:
        for obj in (bad_const, missing, unknown):
            f.write(json.dumps(obj) + "\n")
    with open(wl, "a") as f:  # a duplicate uuid
        f.write(workload_line("rms_h256", 1))
    plan = _plan(ds)
    assert sorted(plan.workloads["rms_h256"]) == ["rms_h256_b1", "rms_h256_b4"]
    assert len(plan.jobs) == 4
    text = "\n".join(str(p) for p in plan.errors)
    assert "jsonl:3: workload.axes.hidden_size: is 128, the definition fixes it to 256" in text
    assert "jsonl:4: workload.axes: missing var axis 'batch_size'" in text
    assert "jsonl:5: workload.inputs.y: unknown input 'y'" in text
    assert "jsonl:6: workload.uuid: duplicate workload uuid 'rms_h256_b1'" in text


def test_invalid_definition_and_solution_drop_their_branch(tmp_path):
    ds = write_dataset(tmp_path, batches=(1,))
    d = definition("rms_broken")
    d["inputs"]["x"]["shape"] = ["batch_size", "no_such_axis"]
    (ds / "definitions/rmsnorm/rms_broken.json").write_text(json.dumps(d))
    bad = solution("empty_source", "", False)
    (ds / "solutions/tests/rmsnorm/rms_h256/empty_source.json").write_text(json.dumps(bad))
    plan = _plan(ds)
    assert "rms_broken" not in plan.definitions
    assert "empty_source" not in plan.solutions
    assert {j.solution for j in plan.jobs} == {"torch_value", "torch_dps"}
    text = "\n".join(str(p) for p in plan.errors)
    assert "rms_broken.json: inputs.x.shape[1]: unknown axis 'no_such_axis'" in text
    assert "empty_source.json: sources[0].content: empty file" in text


def test_interpreted_languages_count_fixed_size_tensors():
    from flashinfer_bench.data import Definition, Solution

    d = Definition.model_validate({
        "name": "mm_n64", "op_type": "gemm",
        "axes": {"M": {"type": "var"}, "N": {"type": "const", "value": 64}},
        "inputs": {"A": {"shape": ["M", "N"], "dtype": "float32"}, "B": {"shape": ["N", "N"], "dtype": "float32"}},
        "outputs": {"C": {"shape": ["M", "N"], "dtype": "float32"}},
        "reference": "def run(A, B):\n    return A @ B\n",
    })

    def sol(language):
        s = solution(f"mm_{language}", "def run(A, B):\n    return A @ B\n", False, definition="mm_n64")
        s["spec"]["language"] = language
        return Solution.model_validate(s)

    limits = {"max_elements": 1000, "max_elements_interpreted": 1000}
    # M=1: A and C hold 64 elements, the fixed B 4096
    assert cpu_skip_reason(d, sol("python"), {"M": 1}, limits) is None  # native: B is cheap
    why = cpu_skip_reason(d, sol("triton"), {"M": 1}, limits)
    assert why == "4096 elements is above the CPU limit cpu.max_elements_interpreted=1000"
    assert cpu_skip_reason(d, sol("python"), {"M": 20}, limits) == "1280 elements is above the CPU limit cpu.max_elements=1000"


def test_benchmark_params_are_shell_quoted_and_dataset_relative(tmp_path):
    ds = write_dataset(tmp_path, batches=(1,))
    plan = _plan(ds.resolve())
    cfg = {"evaluation": {"iterations": 3}, "cpu": {"evaluation": {"iterations": 2}}}
    params = benchmark_params(plan, cfg, {"rms_h256": "digest"}, "res dir")
    p = params[("rms_h256", "torch_value", "rms_h256_b1")]
    args = shlex.split(p["args"])
    opts = dict(zip(args[::2], args[1::2]))
    assert opts["--definition-file"] == "definitions/rmsnorm/rms_h256.json"
    assert opts["--solution-file"] == "solutions/tests/rmsnorm/rms_h256/torch_value.json"
    assert json.loads(opts["--evaluation"]) == {"iterations": 2}
    assert json.loads(opts["--workload"])["uuid"] == "rms_h256_b1"
    assert opts["--out"] == "res dir/traces/rms_h256/torch_value/rms_h256_b1.json"
    assert opts["--build"] == "res dir/builds/torch_value.json"
    assert "--log" not in opts  # the rule's `log:` passes it
    assert p["definition_digest"] == "digest" and p["evaluator"]


def test_worker_prestart_only_for_local_gpu_runs(monkeypatch):
    assert should_prestart({}, "cuda", local_exec=True, dryrun=False)
    assert should_prestart({"prestart_worker": True}, "cuda:1", local_exec=True, dryrun=False)
    assert not should_prestart({}, "cpu", local_exec=True, dryrun=False)
    assert not should_prestart({}, "cuda", local_exec=True, dryrun=True)
    assert not should_prestart({}, "cuda", local_exec=False, dryrun=False)  # SLURM
    assert not should_prestart({"prestart_worker": False}, "cuda", local_exec=True, dryrun=False)
    spawned = []
    monkeypatch.setattr("subprocess.Popen", lambda *a, **k: spawned.append(a) or None)
    assert prestart_workers("cpu") is None and not spawned


def test_slurm_profile_turns_prestart_off():
    text = (Path(__file__).resolve().parents[2] / "profiles/slurm/config.yaml").read_text()
    assert "prestart_worker=false" in text
