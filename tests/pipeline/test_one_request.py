"""One request for one pair, whichever door it comes through: the benchmark job (its stdlib-only
client, run as the rule runs it) and the Python API build it with bench/request.py."""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from flashinfer_bench.bench.client import request_for
from flashinfer_bench.bench.config import EvalConfig
from flashinfer_bench.bench.request import DEFAULT_STARTUP_TIMEOUT_S, DEFAULT_TIMEOUT_S
from flashinfer_bench.compile.result import BuildResult
from flashinfer_bench.data import Definition, TraceSet
from flashinfer_bench.pipeline.jobs import compile_job
from flashinfer_bench.pipeline.plan import benchmark_params, build_plan
from flashinfer_bench.pipeline.settings import evaluation_for

from .harness import write_dataset

THIN_CLIENT = Path(__file__).resolve().parents[2] / "flashinfer_bench" / "pipeline" / "thin_client.py"

# what the job prints: its request, built as `python -S scripts/benchmark.py ...` builds it
_JOB_REQUEST = (
    "import importlib.util, json, sys\n"
    "from pathlib import Path\n"
    f"spec = importlib.util.spec_from_file_location('_fib_pipeline_thin_client', {str(THIN_CLIENT)!r})\n"
    "tc = importlib.util.module_from_spec(spec); spec.loader.exec_module(tc)\n"
    "a = tc._parse_args(sys.argv[1:])\n"
    "req = tc.prepare(a, Path(a.dataset).resolve())\n"
    "print(json.dumps({'request': req, 'pydantic': 'pydantic' in sys.modules}))\n"
)


def test_the_job_and_the_python_api_send_the_worker_the_same_request(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path, batches=(4,))
    results, cache, workers = tmp_path / "results", tmp_path / "cache", tmp_path / "workers"
    build_file = results / "builds" / "torch_value.json"
    compile_job(str(ds), "solutions/tests/rmsnorm/rms_h256/torch_value.json", "definitions/rmsnorm/rms_h256.json",
                str(build_file), str(tmp_path / "compile.log"), cache_dir=str(cache))
    config = {"evaluation": {"iterations": 7, "timeout_s": 60}, "cpu": {"evaluation": {"num_trials": 1}}}
    plan = build_plan(ds, device="cpu")
    params = benchmark_params(plan, config, {"rms_h256": "digest"}, str(results))
    job_args = params["rms_h256", "torch_value", "rms_h256_b4"]["args"]
    argv = [*shlex.split(job_args), "--log", str(tmp_path / "bench.log"), "--dataset", str(ds),
            "--cache-dir", str(cache), "--worker-dir", str(workers)]
    p = subprocess.run([sys.executable, "-S", "-c", _JOB_REQUEST, *argv], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    job = out["request"]
    assert not out["pydantic"]  # the job's fast path stays off the package's imports
    assert job["build"]["status"] == "OK"

    ts = TraceSet.from_path(ds)
    definition = ts.definitions["rms_h256"]
    solution = next(s for s in ts.solutions_for("rms_h256") if s.name == "torch_value")
    workload = next(t for t in ts.workloads_for("rms_h256") if t.workload.uuid == "rms_h256_b4")
    settings = evaluation_for(config, "rms_h256", "cpu", definition.op_type)
    eval_config = EvalConfig(**settings, worker_dir=str(workers), cache_dir=str(cache))
    build = BuildResult.from_dict(json.loads(build_file.read_text()))
    api = request_for(definition, solution, workload, build, eval_config, ds)

    assert job.keys() == api.keys()
    for key in ("solution_name", "workload", "build", "dataset_root"):
        assert job[key] == api[key], key
    # the definition as the dataset's file has it and as the model dumps it: one definition
    assert Definition.model_validate(job["definition"]) == Definition.model_validate(api["definition"])
    # the job sends the settings it was given, the API all of them: the worker reads the same
    assert EvalConfig.model_validate(job["config"]).model_dump() == EvalConfig.model_validate(api["config"]).model_dump()
    assert EvalConfig.model_validate(job["config"]).iterations == 7


def test_the_stdlib_request_knows_the_evaluators_defaults() -> None:
    """bench/request.py cannot import EvalConfig (pydantic) but waits as long as its defaults say."""
    fields = EvalConfig.model_fields
    assert (DEFAULT_TIMEOUT_S, DEFAULT_STARTUP_TIMEOUT_S) == (fields["timeout_s"].default, fields["startup_timeout_s"].default)


def test_the_reference_timed_for_one_door_serves_the_other(tmp_path: Path) -> None:
    """The job's request (the definition as its file spells it) and the Python API's (as the model
    dumps it) are one measurement for the worker: the reference is timed once for both."""
    from flashinfer_bench.bench.client import send_request, shutdown_worker

    # 2048 rows (~1 ms a call here): a CPU reference of microseconds is rarely quiet enough to keep
    ds = write_dataset(tmp_path, batches=(2048,))
    cache, workers = tmp_path / "cache", tmp_path / "workers"
    build_file = tmp_path / "build.json"
    compile_job(str(ds), "solutions/tests/rmsnorm/rms_h256/torch_value.json", "definitions/rmsnorm/rms_h256.json",
                str(build_file), str(tmp_path / "compile.log"), cache_dir=str(cache))
    ts = TraceSet.from_path(ds)
    definition = ts.definitions["rms_h256"]
    workload = next(t for t in ts.workloads_for("rms_h256") if t.workload.uuid == "rms_h256_b2048")
    # converged (a 95% CI within 5%, at least 16 samples) within a second even on a loaded 2-core VM
    config = EvalConfig(device="cpu", worker_dir=str(workers), cache_dir=str(cache), iterations=16, max_time_s=1.0,
                        target_rel_ci=0.05, timeout_s=60)
    build = BuildResult.from_dict(json.loads(build_file.read_text()))
    api = request_for(definition, "torch_value", workload, build, config, ds)
    as_file = {**api, "definition": json.loads((ds / "definitions/rmsnorm/rms_h256.json").read_text())}
    assert as_file["definition"] != api["definition"]  # the file leaves defaults out
    from flashinfer_bench.bench.speedup import reusable_reference

    def reference_of(trace) -> dict:
        extra = trace.evaluation.correctness.extra
        return {"converged": extra.get("reference_converged"), "noisy": extra.get("reference_noisy"),
                "samples": extra.get("reference_samples", 0), "cached": extra.get("reference_cached")}

    from flashinfer_bench.bench.worker import reference_key

    # the worker keeps a reference timing under one key for both doors' requests
    assert reference_key(as_file, config, "cpu") == reference_key(api, config, "cpu")
    # ... and serves it to the other door: only a converged, quiet timing is kept (a noisy one is
    # timed again), so on a loaded machine the first door may need a few tries to get one
    firsts = []
    try:
        for _ in range(6):
            firsts.append(send_request(as_file, "cpu"))
            ref = reference_of(firsts[-1])
            if ref["cached"] or reusable_reference(ref):
                break
        second = send_request(api, "cpu")
    finally:
        shutdown_worker("cpu", config)
    for t in (*firsts, second):
        assert t.evaluation.status.value == "PASSED", t.evaluation.log
    assert reference_of(firsts[0])["cached"] is False  # the first request of the worker timed it
    if not reusable_reference(reference_of(firsts[-1])) and not reference_of(firsts[-1])["cached"]:
        # 6 noisy timings in a row (a VM slowed by its neighbours): none was kept, so the second
        # door timed it again; the key above is what makes the two one measurement
        assert reference_of(second)["cached"] is False
        return
    assert reference_of(second)["cached"] is True, [reference_of(t) for t in (*firsts, second)]
