"""Runs inside FlashInfer-Bench 0.1.2's interpreter (a separate venv), driven by
test_upstream_compat.py. Prints one JSON object on stdout.

    python -I upstream_fib.py '{"read": [DIR, ...], "write": {"from": ANCHOR, "to": OUT}}'

read:  load each DIR with upstream's TraceSet.from_path and dump every entity with upstream's models.
write: re-serialize ANCHOR with upstream's own writers into OUT (definitions and solutions with
       save_json_file, as upstream does, i.e. exclude_unset), add a safetensors-backed workload
       (add_workload_blob_tensor) and one trace of every status (add_traces); dump what it wrote.
"""
import json
import sys
from importlib import metadata


def dump_set(ts):
    return {
        "definitions": {n: d.model_dump(mode="json") for n, d in ts.definitions.items()},
        "solutions": {s.name: s.model_dump(mode="json") for sols in ts.solutions.values() for s in sols},
        "workloads": [w.model_dump(mode="json") for ws in ts.workloads.values() for w in ws],
        "traces": [t.model_dump(mode="json") for ts_ in ts.traces.values() for t in ts_],
    }


def write(src, out):
    import torch

    from flashinfer_bench.data import (
        Correctness, Environment, Evaluation, EvaluationStatus, Performance, SafetensorsInput,
        ScalarInput, Trace, TraceSet, Workload,
    )
    from flashinfer_bench.data.json_utils import save_json_file

    ts = TraceSet.from_path(src)
    from pathlib import Path

    new = TraceSet(root=Path(out))
    for d in ts.definitions.values():
        new.definitions[d.name] = d
        save_json_file(d, new.definitions_path / d.op_type / f"{d.name}.json")
    for sols in ts.solutions.values():
        for s in sols:
            op = ts.definitions[s.definition].op_type
            save_json_file(s, new.solutions_path / s.author / op / s.definition / f"{s.name}.json")
    for ws in ts.workloads.values():
        new.add_workload_traces(ws)

    # a workload whose inputs come from a safetensors file, written by upstream's own helper
    d = new.definitions["rmsnorm_d4096"]
    uuid = "upstream-blob-b2"
    path = new.add_workload_blob_tensor(d.name, uuid, {
        "x": torch.randn(2, 4096, dtype=torch.float16),
        "weight": torch.ones(4096, dtype=torch.float16),
    })
    blob_wl = Workload(axes={"batch_size": 2}, uuid=uuid, inputs={
        "x": SafetensorsInput(path=path, tensor_key="x"),
        "weight": SafetensorsInput(path=path, tensor_key="weight"),
        "eps": ScalarInput(value=1e-6),
    })
    new.add_workload_traces([Trace(definition=d.name, workload=blob_wl)])

    env = Environment(hardware="NVIDIA H100 80GB HBM3", libs={"torch": torch.__version__, "cuda": "12.8"})
    wl = ts.workloads[d.name][0].workload
    evs = [
        Evaluation(status=EvaluationStatus.PASSED, environment=env, timestamp="2026-02-13T10:00:00",
                   correctness=Correctness(max_relative_error=1e-5, max_absolute_error=2e-4, extra={"matched_ratio": 1.0}),
                   performance=Performance(latency_ms=0.02, reference_latency_ms=0.05, speedup_factor=2.5)),
        Evaluation(status=EvaluationStatus.INCORRECT_NUMERICAL, environment=env, timestamp="2026-02-13T10:00:01",
                   correctness=Correctness(max_relative_error=float("nan"), max_absolute_error=float("inf"))),
        Evaluation(status=EvaluationStatus.INCORRECT_SHAPE, environment=env, timestamp="2026-02-13T10:00:02", log="shape"),
        Evaluation(status=EvaluationStatus.INCORRECT_DTYPE, environment=env, timestamp="2026-02-13T10:00:03", log="dtype"),
        Evaluation(status=EvaluationStatus.RUNTIME_ERROR, environment=env, timestamp="2026-02-13T10:00:04", log="boom"),
        Evaluation(status=EvaluationStatus.COMPILE_ERROR, environment=env, timestamp="2026-02-13T10:00:05", log="nvcc"),
        Evaluation(status=EvaluationStatus.TIMEOUT, environment=env, timestamp="2026-02-13T10:00:06", log="300 s"),
    ]
    sol = ts.solutions[d.name][0].name
    new.add_traces([Trace(definition=d.name, workload=wl, solution=sol, evaluation=e) for e in evs])
    new.add_traces([Trace(definition=d.name, workload=blob_wl, solution=sol, evaluation=evs[0])])
    return dump_set(TraceSet.from_path(out))


def main():
    req = json.loads(sys.argv[1])
    import flashinfer_bench
    from flashinfer_bench.data import TraceSet

    res = {"version": metadata.version("flashinfer-bench"), "module": flashinfer_bench.__file__}
    res["read"] = [dump_set(TraceSet.from_path(p)) for p in req.get("read", [])]
    if req.get("write"):
        res["wrote"] = write(req["write"]["from"], req["write"]["to"])
    sys.stdout.write("\n@@RESULT@@" + json.dumps(res) + "\n")


if __name__ == "__main__":
    main()
