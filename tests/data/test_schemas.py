"""The JSON Schemas in schema/ and the pydantic models are one contract."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, Iterator, List, Set, Tuple, Type

import pytest
from pydantic import BaseModel

from flashinfer_bench.data import (
    AxisConst, AxisVar, BuildSpec, Correctness, Definition, Environment, Evaluation, Performance,
    RandomInput, SafetensorsInput, ScalarInput, Solution, SourceFile, TensorSpec, Tolerance, Trace,
    TraceSet, Workload,
)
from flashinfer_bench.data.io import iter_jsonl, read_json
from flashinfer_bench.data.schema import FILES, build_schemas, schema_errors, schema_text, validator

from .samples import traces_of_every_status

SCHEMAS = build_schemas()


def _props(node: Dict[str, Any]) -> Set[str]:
    """Every property name a schema node allows, including those under allOf/if-then."""
    out = set(node.get("properties", {}))
    for sub in node.get("allOf", []):
        out |= _props(sub.get("then", {}))
    return out


# model(s) -> (schema name, JSON pointer of the node that describes them)
CORRESPONDENCE: List[Tuple[Tuple[Type[BaseModel], ...], str, str]] = [
    ((Definition,), "definition", ""),
    ((AxisConst, AxisVar), "definition", "/$defs/axis"),
    ((TensorSpec,), "definition", "/$defs/tensor"),
    ((Tolerance,), "definition", "/$defs/tolerance"),
    ((Solution,), "solution", ""),
    ((BuildSpec,), "solution", "/$defs/build_spec"),
    ((SourceFile,), "solution", "/$defs/source_file"),
    ((Trace,), "workload", ""),
    ((Workload,), "workload", "/$defs/workload"),
    ((RandomInput, ScalarInput, SafetensorsInput), "workload", "/$defs/input"),
    ((Trace,), "trace", ""),
    ((Workload,), "trace", "/$defs/workload"),
    ((Evaluation,), "trace", "/$defs/evaluation"),
    ((Correctness,), "trace", "/$defs/correctness"),
    ((Performance,), "trace", "/$defs/performance"),
    ((Environment,), "trace", "/$defs/environment"),
]


def _node(schema: str, pointer: str) -> Dict[str, Any]:
    node = SCHEMAS[schema]
    for part in [p for p in pointer.split("/") if p]:
        node = node[part]
    return node


def test_schema_files_are_generated_from_the_package(repo_root: Path) -> None:
    for name, fname in FILES.items():
        path = repo_root / "schema" / fname
        assert path.read_text() == schema_text(SCHEMAS[name]), (
            f"{path} is stale: run `python -m flashinfer_bench.data.schema schema/`"
        )


@pytest.mark.parametrize("name", sorted(FILES))
def test_schemas_are_valid_draft_2020_12(name: str) -> None:
    import jsonschema

    s = SCHEMAS[name]
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(s)
    validator(name)  # every $ref resolves when used


@pytest.mark.parametrize("models,schema,pointer", CORRESPONDENCE, ids=lambda x: getattr(x, "__name__", str(x)))
def test_every_model_field_is_in_the_schema_and_back(models, schema, pointer) -> None:
    node = _node(schema, pointer)
    props = _props(node)
    fields = set().union(*(set(m.model_fields) | getattr(m, "known_extra_fields", set()) for m in models))
    assert fields - props == set(), f"model fields missing from {schema}{pointer}"
    assert props - fields == set(), f"schema properties of {schema}{pointer} the models lack"
    required = set(node.get("required", []))
    if len(models) == 1:
        model_required = {n for n, f in models[0].model_fields.items() if f.is_required()}
        assert model_required <= required, f"required by the model, optional in {schema}{pointer}"


def test_enums_agree() -> None:
    from flashinfer_bench.data import DType, EvaluationStatus, SupportedLanguages

    assert _node("definition", "/$defs/tensor")["properties"]["dtype"]["enum"] == [d.value for d in DType]
    assert _node("solution", "/$defs/build_spec")["properties"]["language"]["enum"] == [
        x.value for x in SupportedLanguages
    ]
    assert _node("trace", "/$defs/evaluation")["properties"]["status"]["enum"] == [
        x.value for x in EvaluationStatus
    ]


# ------------------------------------------------------------------ the examples validate
def _documents(root: Path) -> Iterator[Tuple[str, str, Any]]:
    """(schema name, 'file[:line]', parsed JSON) for every document of a dataset."""
    for f in sorted((root / "definitions").rglob("*.json")):
        yield "definition", str(f), read_json(f)[0]
    for f in sorted((root / "solutions").rglob("*.json")):
        yield "solution", str(f), read_json(f)[0]
    for kind, schema in (("workloads", "workload"), ("traces", "trace")):
        for f in sorted((root / kind).rglob("*.jsonl")):
            for line, obj, probs in iter_jsonl(f):
                assert not probs
                yield schema, f"{f}:{line}", obj


MODELS = {"definition": Definition, "solution": Solution, "workload": Trace, "trace": Trace}


def _same(a: Any, b: Any) -> bool:
    """JSON equality where NaN equals NaN and an int equals the same float."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, str) and a.lower() in ("nan", "infinity", "inf") and isinstance(b, (str, float)):
        return math.isnan(float(a)) and math.isnan(float(b)) if a.lower() == "nan" else float(a) == float(b)
    return a == b


def _contains(orig: Any, dumped: Any) -> bool:
    """Everything `orig` says is in `dumped` (which may add defaults)."""
    if isinstance(orig, dict) and isinstance(dumped, dict):
        return all(k in dumped and _contains(v, dumped[k]) for k, v in orig.items())
    if isinstance(orig, list) and isinstance(dumped, list):
        return len(orig) == len(dumped) and all(_contains(x, y) for x, y in zip(orig, dumped))
    return _same(orig, dumped) or _same(dumped, orig)


def _check_dataset(root: Path) -> int:
    n = 0
    for schema, where, obj in _documents(root):
        assert schema_errors(schema, obj) == [], where
        model = MODELS[schema].model_validate(obj)
        dumped = json.loads(model.model_dump_json())
        # lossless: everything the file says comes back, unknown fields included
        for k, v in obj.items():
            assert _contains(v, dumped.get(k)), f"{where}: {k} changed on round trip"
        assert schema_errors(schema, dumped) == [], f"{where}: our own output breaks the schema"
        again = json.loads(MODELS[schema].model_validate(dumped).model_dump_json())
        assert _same(again, dumped), f"{where}: model -> JSON -> model is not stable"
        n += 1
    return n


def test_anchor_dataset_fits_schema_and_round_trips(anchor_dataset: Path) -> None:
    assert _check_dataset(anchor_dataset) == 2 + 3 + 14


def test_example_dataset_fits_schema_and_round_trips(example_dataset: Path) -> None:
    assert _check_dataset(example_dataset) > 0


def test_our_traces_fit_schema_and_round_trip(anchor_dataset: Path, tmp_path: Path) -> None:
    ts = TraceSet.from_path(anchor_dataset)
    wl = ts.workloads["rmsnorm_d4096"][0]
    traces = traces_of_every_status("rmsnorm_d4096", wl.workload, "rmsnorm_triton_row")
    for t in traces:
        ts.add_trace(t)
    ts.to_path(tmp_path / "out")
    assert _check_dataset(tmp_path / "out") == 2 + 3 + 14 + len(traces)
    back = TraceSet.from_path(tmp_path / "out")
    assert back.problems == []
    for a, b in zip(traces, back.traces["rmsnorm_d4096"]):
        assert _same(json.loads(a.model_dump_json()), json.loads(b.model_dump_json()))
    passed = back.traces["rmsnorm_d4096"][0]
    assert passed.evaluation.extra["flags"] == ["noisy"]
    assert passed.evaluation.environment.model_extra["sm_count"] == 132
    nan = back.traces["rmsnorm_d4096"][2].evaluation.correctness
    assert math.isnan(nan.max_relative_error) and nan.max_absolute_error == math.inf


def test_bundle_round_trip(anchor_dataset: Path, tmp_path: Path) -> None:
    ts = TraceSet.from_path(anchor_dataset)
    for t in traces_of_every_status("rmsnorm_d4096", ts.workloads["rmsnorm_d4096"][0].workload, "rmsnorm_torch_fn"):
        ts.add_trace(t)  # in memory: add_traces would write into the shared anchor dataset
    ts.save(tmp_path / "bundle.json")
    back = TraceSet.load(tmp_path / "bundle.json")
    assert back.definitions == ts.definitions
    assert [s.name for s in back.all_solutions()] == [s.name for s in ts.all_solutions()]
    assert _same(back.to_dict(), ts.to_dict())


# ------------------------------------------------------------------ the schema refuses bad documents
GOOD_DEF = {
    "name": "d", "op_type": "o",
    "axes": {"b": {"type": "var"}, "h": {"type": "const", "value": 8}},
    "inputs": {"x": {"shape": ["b", "h"], "dtype": "float16"}},
    "outputs": {"y": {"shape": ["b", "h"], "dtype": "float16"}},
    "reference": "def run(x):\n    return x\n",
}


@pytest.mark.parametrize("patch,where", [
    (lambda d: d["inputs"]["x"].update(dtype="float17"), "inputs.x.dtype"),
    (lambda d: d["axes"]["h"].update(value=-1), "axes.h.value"),
    (lambda d: d["axes"]["h"].pop("value"), "axes.h"),
    (lambda d: d.pop("reference"), "reference"),
    (lambda d: d.update(tags=[""]), "tags.0"),
])
def test_schema_rejects_bad_definitions(patch, where) -> None:
    d = json.loads(json.dumps(GOOD_DEF))
    assert schema_errors("definition", d) == []
    patch(d)
    errs = schema_errors("definition", d)
    assert errs and any(where in e for e in errs), errs


def test_schema_accepts_upstream_exclude_unset_axes() -> None:
    """FlashInfer-Bench 0.1.2 saves definitions with exclude_unset: axes may lack 'type'."""
    d = json.loads(json.dumps(GOOD_DEF))
    d["axes"] = {"b": {}, "h": {"value": 8}}
    assert schema_errors("definition", d) == []
    m = Definition.model_validate(d)
    assert m.var_axes == ["b"] and m.const_axes == {"h": 8}


def test_schema_enforces_evaluation_status_rule() -> None:
    base = {"definition": "d", "solution": "s",
            "workload": {"axes": {"b": 1}, "inputs": {}, "uuid": "u"},
            "evaluation": {"status": "PASSED", "environment": {"hardware": "h"}, "timestamp": "t",
                           "correctness": {"max_relative_error": 0, "max_absolute_error": 0},
                           "performance": {"latency_ms": 1, "reference_latency_ms": 1, "speedup_factor": 1}}}
    assert schema_errors("trace", base) == []
    bad = json.loads(json.dumps(base))
    del bad["evaluation"]["performance"]
    assert schema_errors("trace", bad)
    bad = json.loads(json.dumps(base))
    bad["evaluation"]["status"] = "RUNTIME_ERROR"
    assert schema_errors("trace", bad)
    bad["evaluation"]["correctness"] = bad["evaluation"]["performance"] = None
    assert schema_errors("trace", bad) == []
    assert schema_errors("workload", base)  # a result is not a workload line


# ------------------------------------------------------------------ schema and `validate` agree
def _mutate_line(path: Path, change) -> Any:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    change(lines[0])
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return lines[0]


def _mutate_file(path: Path, change) -> Any:
    obj = json.loads(path.read_text())
    change(obj)
    path.write_text(json.dumps(obj))
    return obj


def _nan_latency(line: Dict[str, Any]) -> None:
    line["solution"] = "rmsnorm_torch"
    line["evaluation"] = {"status": "PASSED", "environment": {"hardware": "h"}, "timestamp": "t",
                          "correctness": {"max_relative_error": 0, "max_absolute_error": 0},
                          "performance": {"latency_ms": "NaN", "reference_latency_ms": 1, "speedup_factor": 1}}


@pytest.mark.parametrize("kind,change", [
    ("definition", lambda d: d.update(tags=[""])),
    ("definition", lambda d: d.update(constraints=[""])),
    ("definition", lambda d: d["inputs"]["x"].update(dtype="fp16")),
    ("definition", lambda d: d["axes"].update({"": {"type": "var"}})),
    ("solution", lambda s: s["spec"].update(target_hardware=[])),
    ("solution", lambda s: s["spec"].update(dependencies=[""])),
    ("solution", lambda s: s["sources"][0].update(content="")),
    ("solution", lambda s: s["spec"].update(entry_point="main.py")),
    ("solution", lambda s: s["spec"].update(language="rust")),
    ("workload", lambda w: w["workload"]["axes"].update(batch_size=-1)),
    ("workload", lambda w: w["workload"].pop("inputs")),
    ("workload", lambda w: w["workload"].pop("uuid")),
    ("workload", lambda w: w["workload"]["inputs"]["eps"].update(value="1e-6")),
    ("workload", lambda w: w.update(solution="s")),
    ("trace", _nan_latency),
])
def test_what_the_schema_refuses_validate_reports(tmp_path: Path, kind: str, change) -> None:
    from flashinfer_bench.data.validate import validate_dataset

    from .dsbuild import DEFINITION, SOLUTION, WORKLOADS, make_dataset

    root = make_dataset(tmp_path / "ds")
    if kind == "definition":
        obj = _mutate_file(root / DEFINITION, change)
    elif kind == "solution":
        obj = _mutate_file(root / SOLUTION, change)
    elif kind == "workload":
        obj = _mutate_line(root / WORKLOADS, change)
    else:
        src = root / WORKLOADS
        dst = root / "traces/rmsnorm/rmsnorm_d4096.jsonl"
        dst.parent.mkdir(parents=True)
        dst.write_text(src.read_text().splitlines()[0] + "\n")
        obj = _mutate_line(dst, change)
    assert schema_errors(kind, obj), "the schema accepts it"
    errs = [p for p in validate_dataset(root) if p.level == "error"]
    assert errs, "validate accepts it"
