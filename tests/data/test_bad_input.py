"""Bad input gives a clear error naming file, line and field; nothing crashes; good entries
around a bad one still load."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from flashinfer_bench.data import TraceSet
from flashinfer_bench.data.validate import validate_dataset

from .dsbuild import DEF, DEFINITION, SOLUTION, WORKLOADS, make_dataset, workload_line, write_json, write_jsonl


@pytest.fixture
def ds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    make_dataset(Path("ds"))
    return Path("ds")


def errors(path: Path) -> List[str]:
    return [str(p) for p in validate_dataset(path) if p.level == "error"]


def test_truncated_json_definition(ds: Path) -> None:
    text = (ds / DEFINITION).read_text()
    (ds / DEFINITION).write_text(text[: len(text) // 2])
    errs = errors(ds)
    assert len(errs) == 1, errs  # no cascade into the solution and workloads of that definition
    assert errs[0].startswith(f"ds/{DEFINITION}:")
    assert "invalid JSON:" in errs[0]


def test_truncated_json_solution_leaves_the_rest_loaded(ds: Path) -> None:
    (ds / SOLUTION).write_text('{"name": "rmsnorm_torch", "definition": ')
    ts = TraceSet.from_path(ds)
    assert list(ts.definitions) == ["rmsnorm_d4096"] and len(ts.workloads["rmsnorm_d4096"]) == 3
    (err,) = ts.errors
    assert str(err).startswith(f"ds/{SOLUTION}:1: invalid JSON: Expecting value (column ")


@pytest.mark.parametrize("change,expected", [
    (lambda d: d["axes"]["hidden_size"].update(value="4096x"),
     "axes.hidden_size.value: must be an integer, not the string '4096x'"),
    (lambda d: d["inputs"]["x"].update(shape="batch_size"), "inputs.x.shape: Input should be a valid list (got 'batch_size')"),
    (lambda d: d.update(tags={"a": 1}), "tags: Input should be a valid list"),
    (lambda d: d.update(name=7), "name: Input should be a valid string (got 7)"),
    (lambda d: d["inputs"]["x"].update(dtype="float17"),
     "inputs.x.dtype: Input should be 'float32', 'float16', 'bfloat16', 'float8_e4m3fn', 'float8_e5m2', "
     "'float4_e2m1', 'int64', 'int32', 'int16', 'int8' or 'bool' (got 'float17')"),
    (lambda d: d.pop("outputs"), "outputs: required field is missing"),
    (lambda d: d["axes"]["hidden_size"].pop("value"), "axes.hidden_size.value: required field is missing"),
    (lambda d: d["axes"]["hidden_size"].update(type="fixed"),
     "axes.hidden_size: axis 'type' must be 'const' (with a 'value') or 'var' (got 'fixed')"),
])
def test_wrong_types_unknown_dtypes_missing_fields_in_a_definition(ds: Path, change, expected: str) -> None:
    d = json.loads(json.dumps(DEF))
    change(d)
    write_json(ds / DEFINITION, d)
    assert errors(ds) == [f"ds/{DEFINITION}: {expected}"]


def test_not_an_object(ds: Path) -> None:
    (ds / DEFINITION).write_text("[1, 2]")
    assert errors(ds) == [f"ds/{DEFINITION}: expected a JSON object, got list"]


def test_one_bad_jsonl_line_among_good_ones(ds: Path) -> None:
    good = [workload_line(f"w{i}", i + 1) for i in range(4)]
    bad_type = workload_line("wt", 1)
    bad_type["workload"]["axes"]["batch_size"] = "many"
    write_jsonl(ds / WORKLOADS, [good[0], good[1], '{"definition": "rmsnorm_d4096", "workload": {"ax', good[2],
                                 bad_type, "", good[3]])
    ts = TraceSet.from_path(ds)
    assert [t.workload.uuid for t in ts.workloads["rmsnorm_d4096"]] == ["w0", "w1", "w2", "w3"]
    assert [str(p) for p in ts.errors] == [
        f"ds/{WORKLOADS}:3: invalid JSON: Unterminated string starting at (column 46)",
        f"ds/{WORKLOADS}:5: workload.axes.batch_size: must be an integer, not the string 'many'",
    ]
    assert errors(ds) == [str(p) for p in ts.errors]


def test_unknown_input_type_and_scalar_of_wrong_json_type(ds: Path) -> None:
    write_jsonl(ds / WORKLOADS, [
        workload_line("a", 1, x={"type": "zeros"}),
        workload_line("b", 1, eps={"type": "scalar", "value": "1e-6"}),
        workload_line("c", 1, eps={"type": "scalar"}),
    ])
    assert errors(ds) == [
        f"ds/{WORKLOADS}:1: workload.inputs.x: input 'type' must be 'random', 'scalar' or 'safetensors' (got 'zeros')",
        f"ds/{WORKLOADS}:2: workload.inputs.eps.value: must be a number or a boolean, not the string '1e-6'",
        f"ds/{WORKLOADS}:3: workload.inputs.eps.value: required field is missing",
    ]


def test_an_input_named_like_a_union_tag_keeps_its_name(ds: Path) -> None:
    d = json.loads(json.dumps(DEF))
    d["inputs"]["random"] = {"shape": None, "dtype": "int32"}
    d["reference"] = "def run(x, weight, eps, random):\n    return x\n"
    write_json(ds / DEFINITION, d)
    sol = json.loads((ds / SOLUTION).read_text())
    sol["sources"][0]["content"] = d["reference"]
    write_json(ds / SOLUTION, sol)
    write_jsonl(ds / WORKLOADS, [workload_line("a", 1, random={"type": "scalar", "value": "x"})])
    assert errors(ds) == [f"ds/{WORKLOADS}:1: workload.inputs.random.value: must be a number or a boolean, not the string 'x'"]


def test_duplicate_names(ds: Path) -> None:
    write_json(ds / "definitions/b/again.json", DEF)
    write_json(ds / "solutions/b/again.json", json.loads((ds / SOLUTION).read_text()))
    errs = errors(ds)
    assert len(errs) == 2, errs
    assert any("name: duplicate definition name 'rmsnorm_d4096'" in e for e in errs)
    assert any("name: duplicate solution name 'rmsnorm_torch'" in e for e in errs)


# ------------------------------------------------------------------ absurd and cyclic shapes
def test_negative_axis_in_a_workload(ds: Path) -> None:
    write_jsonl(ds / WORKLOADS, [workload_line("a", -3)])
    assert errors(ds) == [
        f"ds/{WORKLOADS}:1: workload.axes.batch_size: Input should be greater than or equal to 0 (got -3)"
    ]


def test_trillion_elements_in_a_workload(ds: Path) -> None:
    write_jsonl(ds / WORKLOADS, [workload_line("a", 10**12 // 4096)])
    errs = errors(ds)
    assert errs == [
        f"ds/{WORKLOADS}:1: workload.axes: input 'x' would have shape (244140625, 4096): 1000000000000 elements, "
        "more than 2^36 (an absurd size, likely a typo)",
        f"ds/{WORKLOADS}:1: workload.axes: output 'out' would have shape (244140625, 4096): 1000000000000 "
        "elements, more than 2^36 (an absurd size, likely a typo)",
    ]


def test_absurd_const_axis_in_a_definition(ds: Path) -> None:
    d = json.loads(json.dumps(DEF))
    d["axes"]["hidden_size"]["value"] = 10**12
    d["constraints"] = []
    write_json(ds / DEFINITION, d)
    errs = errors(ds)
    assert f"ds/{DEFINITION}: inputs.weight.shape: 1000000000000 elements from const axes alone, more than 2^36" in errs
    assert all("1000000000000" in e or "elements" in e for e in errs), errs


def test_negative_const_axis(ds: Path) -> None:
    d = json.loads(json.dumps(DEF))
    d["axes"]["hidden_size"]["value"] = -4096
    write_json(ds / DEFINITION, d)
    assert errors(ds) == [f"ds/{DEFINITION}: axes.hidden_size.value: Input should be greater than or equal to 0 (got -4096)"]


def test_cyclic_axes(ds: Path) -> None:
    """Axes defined by each other ('a' is 'b', 'b' is 'a') are not a format: each is a type error."""
    d = json.loads(json.dumps(DEF))
    d["axes"] = {"a": {"type": "const", "value": "b"}, "b": {"type": "const", "value": "a"},
                 "batch_size": {"type": "var"}, "hidden_size": {"type": "const", "value": 4096}}
    write_json(ds / DEFINITION, d)
    assert errors(ds) == [
        f"ds/{DEFINITION}: axes.a.value: must be an integer, not the string 'b'",
        f"ds/{DEFINITION}: axes.b.value: must be an integer, not the string 'a'",
    ]


def test_self_referencing_shape_and_deep_nesting(ds: Path) -> None:
    d = json.loads(json.dumps(DEF))
    d["inputs"]["x"]["shape"] = ["x", "hidden_size"]  # a tensor shaped by its own name
    write_json(ds / DEFINITION, d)
    (ds / "definitions/deep.json").write_text("[" * 100000 + "]" * 100000)
    assert errors(ds) == [
        "ds/definitions/deep.json: invalid JSON: nested too deeply",
        f"ds/{DEFINITION}: inputs.x.shape[0]: unknown axis 'x'",
    ]


def test_binary_garbage_and_a_directory_named_json(ds: Path) -> None:
    (ds / "definitions/garbage.json").write_bytes(b"\xff\xfe\x00\x01")
    (ds / "solutions/dir.json").mkdir()
    errs = errors(ds)
    assert len(errs) == 2
    assert errs[0].startswith("ds/definitions/garbage.json: cannot read:")
    assert errs[1].startswith("ds/solutions/dir.json: cannot read:")


def test_cli_reports_every_bad_input_without_a_traceback(ds: Path) -> None:
    (ds / SOLUTION).write_text('{"name": ')
    (ds / "definitions/deep.json").write_text("{\"a\":" * 50000)
    write_jsonl(ds / WORKLOADS, [workload_line("a", 1), "not json", workload_line("b", -1),
                                 workload_line("c", 10**12), workload_line("a", 2)])
    (ds / "traces").mkdir()
    (ds / "traces/t.jsonl").write_bytes(b"\x00\xff garbage\n")
    r = subprocess.run([sys.executable, "-m", "flashinfer_bench", "validate", "--local", "ds"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "Traceback" not in r.stdout + r.stderr
    lines = [x for x in r.stdout.splitlines() if x.startswith("error: ")]
    assert len(lines) == 8, r.stdout  # the 10^12 workload: its input and its output
    for expected in (f"ds/{SOLUTION}:1: invalid JSON", "ds/definitions/deep.json: invalid JSON: nested too deeply",
                     f"ds/{WORKLOADS}:2: invalid JSON", f"ds/{WORKLOADS}:3: workload.axes.batch_size",
                     f"ds/{WORKLOADS}:4: workload.axes: input 'x' would have shape",
                     f"ds/{WORKLOADS}:5: workload.uuid: duplicate workload uuid 'a'",
                     "ds/traces/t.jsonl:1: cannot read this line: not UTF-8 text"):
        assert any(expected in x for x in lines), (expected, r.stdout)


def test_validation_problems_without_the_input_still_name_fields() -> None:
    """Callers that do not pass the parsed JSON (data=None) still get user-facing field paths."""
    from pydantic import ValidationError

    from flashinfer_bench.data import Trace
    from flashinfer_bench.data.io import validation_problems

    bad = {"definition": "d", "workload": {"axes": {"b": -1}, "uuid": "u",
                                           "inputs": {"e": {"type": "scalar", "value": [1]}}}}
    with pytest.raises(ValidationError) as e:
        Trace.model_validate(bad)
    without = sorted((p.field, p.message) for p in validation_problems(e.value, "f"))
    with_data = sorted((p.field, p.message) for p in validation_problems(e.value, "f", data=bad))
    assert without == with_data == [
        ("workload.axes.b", "Input should be greater than or equal to 0 (got -1)"),
        ("workload.inputs.e.value", "expected one of bool, int, float"),
    ]


def test_a_solution_name_two_files_claim_is_neither_s(ds: Path) -> None:
    """A file sorted first (`0_attacker/x.json`) that claims another solution's name used to take
    it (its traces, apply()'s dispatch): now neither file is used, by the plan or the API."""
    import json as _json

    from flashinfer_bench.data import TraceSet

    victim = next((ds / "solutions").rglob("*.json"))
    body = _json.loads(victim.read_text())
    squat = ds / "solutions" / "0_attacker" / "x.json"
    squat.parent.mkdir(parents=True)
    squat.write_text(_json.dumps({**body, "author": "attacker"}))
    ts = TraceSet.from_path(str(ds))
    assert body["name"] not in {s.name for sols in ts.solutions.values() for s in sols}
    assert any("duplicate solution name" in p.message and "neither is used" in p.message for p in ts.problems)
    # the pipeline's plan loads by the same rule (one engine): neither is benchmarked
    from flashinfer_bench.pipeline.plan import build_plan

    plan = build_plan(ds, device="cpu")
    assert body["name"] not in plan.solutions
    dups = [p for p in plan.problems if "duplicate solution name" in p.message]
    assert len(dups) == 1 and dups[0].field == "name" and str(victim) in dups[0].message + dups[0].path, dups
