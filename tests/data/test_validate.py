"""`validate_dataset` and `flashinfer-bench validate`: every check, located by file, line, field."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, List

import pytest

from flashinfer_bench.cli.main import main as cli
from flashinfer_bench.data import TraceSet
from flashinfer_bench.data.validate import read_safetensors_header, validate_dataset

from .dsbuild import DEF, DEFINITION, SOL, SOLUTION, WORKLOADS, make_dataset, workload_line, write_json, write_jsonl
from .samples import traces_of_every_status


@pytest.fixture
def ds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A valid dataset at ./ds (relative, so messages read 'ds/...')."""
    monkeypatch.chdir(tmp_path)
    make_dataset(Path("ds"))
    return Path("ds")


def errors(path: Path) -> List[str]:
    return [str(p) for p in validate_dataset(path) if p.level == "error"]


def warnings(path: Path) -> List[str]:
    return [str(p) for p in validate_dataset(path) if p.level == "warning"]


def edit_json(path: Path, change: Callable[[Any], None]) -> None:
    obj = json.loads(path.read_text())
    change(obj)
    path.write_text(json.dumps(obj))


def set_workloads(ds: Path, *lines: Any) -> None:
    write_jsonl(ds / WORKLOADS, list(lines))


def test_good_dataset_is_clean(ds: Path) -> None:
    assert validate_dataset(ds) == []


def test_anchor_dataset_is_clean(anchor_dataset: Path) -> None:
    assert validate_dataset(anchor_dataset) == []


def test_example_dataset_is_clean(example_dataset: Path) -> None:
    assert [p for p in validate_dataset(example_dataset) if p.level == "error"] == []


# ------------------------------------------------------------------ workloads
def test_missing_var_axis_names_file_line_field(ds: Path) -> None:
    bad = workload_line("w3", 1)
    bad["workload"]["axes"] = {}
    set_workloads(ds, workload_line("w1", 1), workload_line("w2", 2), bad)
    assert errors(ds) == ["ds/workloads/rmsnorm/rmsnorm_d4096.jsonl:3: workload.axes: missing var axis 'batch_size'"]


def test_const_axis_must_equal_the_definition(ds: Path) -> None:
    w = workload_line("w1", 1)
    w["workload"]["axes"]["hidden_size"] = 1024
    set_workloads(ds, w)
    assert errors(ds) == [
        f"ds/{WORKLOADS}:1: workload.axes.hidden_size: is 1024, the definition fixes it to 4096"
    ]


def test_constraints_are_evaluated_against_every_workload(ds: Path) -> None:
    set_workloads(ds, workload_line("w1", 1), workload_line("big", 8192), workload_line("w2", 4096))
    assert errors(ds) == [
        f"ds/{WORKLOADS}:2: workload.axes: constraint batch_size <= 4096 (with batch_size=8192) does not hold (constraints[1])"
    ]


def test_inputs_must_be_known_and_scalars_typed(ds: Path) -> None:
    set_workloads(
        ds,
        workload_line("a", 1, bias={"type": "random"}),
        workload_line("b", 1, eps={"type": "scalar", "value": True}),
        workload_line("c", 1, x={"type": "scalar", "value": 1.0}),
        workload_line("d", 1, out={"type": "random"}),
        workload_line("e", 1, x={"type": "random", "dtype": "float32"}),
        workload_line("f", 1, x={"type": "random", "dtype": "float17"}),
    )
    assert errors(ds) == [
        f"ds/{WORKLOADS}:1: workload.inputs.bias: unknown input 'bias'; the definition's inputs are ['x', 'weight', 'eps']",
        f"ds/{WORKLOADS}:2: workload.inputs.eps.value: value True (bool) does not fit the declared dtype float32",
        f"ds/{WORKLOADS}:3: workload.inputs.x: a scalar value for a tensor input of shape ['batch_size', 'hidden_size']",
        f"ds/{WORKLOADS}:4: workload.inputs.out: unknown input 'out' (an output); the definition's inputs are ['x', 'weight', 'eps']",
        f"ds/{WORKLOADS}:5: workload.inputs.x.dtype: float32 but the definition declares float16",
        f"ds/{WORKLOADS}:6: workload.inputs.x.dtype: unknown dtype 'float17'",
    ]


def test_int_and_bool_scalars(ds: Path) -> None:
    d = json.loads(json.dumps(DEF))
    d["inputs"]["n"] = {"shape": None, "dtype": "int32"}
    d["inputs"]["flag"] = {"shape": None, "dtype": "bool"}
    d["reference"] = "def run(x, weight, eps, n, flag):\n    return x\n"
    write_json(ds / DEFINITION, d)
    edit_json(ds / SOLUTION, lambda s: s["sources"][0].update(content=d["reference"]))
    ok = dict(n={"type": "scalar", "value": 3}, flag={"type": "scalar", "value": False})
    set_workloads(
        ds,
        workload_line("a", 1, **ok),
        workload_line("b", 1, n={"type": "scalar", "value": 2.5}, flag={"type": "scalar", "value": 1}),
    )
    assert errors(ds) == [
        f"ds/{WORKLOADS}:2: workload.inputs.n.value: value 2.5 (float) does not fit the declared dtype int32",
        f"ds/{WORKLOADS}:2: workload.inputs.flag.value: value 1 (int) does not fit the declared dtype bool",
    ]


def _st(path: str, key: str) -> dict:
    return {"type": "safetensors", "path": path, "tensor_key": key}


def test_safetensors_inputs_are_checked(ds: Path) -> None:
    from .dsbuild import BLOB

    (ds / "blob/bad.safetensors").write_bytes(b"\x10\x00")  # truncated
    set_workloads(
        ds,
        workload_line("ok", 2, x=_st(BLOB, "x")),
        workload_line("shape", 3, x=_st(BLOB, "x")),
        workload_line("key", 2, x=_st(BLOB, "nope")),
        workload_line("dtype", 2, weight=_st(BLOB, "x")),
        workload_line("missing", 2, x=_st("blob/none.safetensors", "x")),
        workload_line("trunc", 2, x=_st("blob/bad.safetensors", "x")),
    )
    errs = errors(ds)
    assert errs == [
        f"ds/{WORKLOADS}:2: workload.inputs.x.tensor_key: tensor 'x' in {BLOB} has shape [2, 4096], the workload needs [3, 4096]",
        f"ds/{WORKLOADS}:3: workload.inputs.x.tensor_key: no tensor 'nope' in {BLOB} (it has ['weight', 'x'])",
        f"ds/{WORKLOADS}:4: workload.inputs.weight.tensor_key: tensor 'x' in {BLOB} has shape [2, 4096], the workload needs [4096]",
        f"ds/{WORKLOADS}:5: workload.inputs.x.path: file 'blob/none.safetensors' not found under the dataset root 'ds'",
        f"ds/{WORKLOADS}:6: workload.inputs.x.path: blob/bad.safetensors: not a readable safetensors file: "
        "file is shorter than the 8-byte header length",
    ]


def test_safetensors_dtype_mismatch(ds: Path) -> None:
    import numpy as np
    from safetensors.numpy import save_file

    save_file({"x": np.zeros((2, 4096), np.float32)}, str(ds / "blob/f32.safetensors"))
    set_workloads(ds, workload_line("a", 2, x=_st("blob/f32.safetensors", "x")))
    assert errors(ds) == [
        f"ds/{WORKLOADS}:1: workload.inputs.x.tensor_key: tensor 'x' in blob/f32.safetensors is F32, the definition declares float16"
    ]


def test_safetensors_header_reader_matches_the_library(ds: Path) -> None:
    from safetensors import safe_open

    from .dsbuild import BLOB

    header = read_safetensors_header(ds / BLOB)
    with safe_open(str(ds / BLOB), "np") as f:
        for k in f.keys():
            assert header[k]["shape"] == list(f.get_slice(k).get_shape())
            assert header[k]["dtype"] == f.get_slice(k).get_dtype()


def test_duplicate_workload_uuid(ds: Path) -> None:
    set_workloads(ds, workload_line("w1", 1), workload_line("w1", 2))
    assert errors(ds) == [f"ds/{WORKLOADS}:2: workload.uuid: duplicate workload uuid 'w1' (first at ds/{WORKLOADS}:1)"]


def test_workload_without_uuid_or_inputs(ds: Path) -> None:
    a, b = workload_line("a", 1), workload_line("b", 1)
    del a["workload"]["uuid"]
    del b["workload"]["inputs"]
    set_workloads(ds, a, b)
    errs = errors(ds)
    assert f"ds/{WORKLOADS}:1: workload.uuid: required field is missing (FlashInfer-Bench 0.1.2 needs it)" in errs
    assert f"ds/{WORKLOADS}:2: workload.inputs: required field is missing (FlashInfer-Bench 0.1.2 needs it)" in errs


# ------------------------------------------------------------------ definitions
@pytest.mark.parametrize("change,expected", [
    (lambda d: d["inputs"]["x"].update(shape=["batch_size", "hidden"]), "inputs.x.shape[1]: unknown axis 'hidden'"),
    (lambda d: d["outputs"].update(weight={"shape": ["hidden_size"], "dtype": "float16"}),
     "outputs: names also used as inputs: ['weight']"),
    (lambda d: d.update(reference="def run(weight, x, eps):\n    return x\n"),
     "reference: run(weight, x, eps) must take the inputs in order (x, weight, eps)"),
    (lambda d: d.update(reference="def run(x, weight, eps)\n    return x\n"), "reference: syntax error at line 1: expected ':'"),
    (lambda d: d.update(reference="def main(x, weight, eps):\n    return x\n"), "reference: no top-level 'def run(...)'"),
    (lambda d: d.update(constraints=["batch_size <"]), "constraints[0]: not an expression: invalid syntax: 'batch_size <'"),
])
def test_definition_checks(ds: Path, change, expected: str) -> None:
    edit_json(ds / DEFINITION, change)
    assert errors(ds) == [f"ds/{DEFINITION}: {expected}"]


@pytest.mark.parametrize("constraint, expected", [
    ("batch < 4", "constraints[0]: cannot be checked: ['batch'] in 'batch < 4' are neither axes nor inputs"),
    ("__import__('os').system('true')", "constraints[0]: cannot be checked: only ['abs', 'ceil', 'float', 'floor', "
     "'int', 'len', 'log2', 'max', 'min', 'sqrt'] and the methods ['all', 'any', 'dim', 'item', 'max', 'min', "
     "'numel', 'size', 'sum'] may be called in \"__import__('os').system('true')\""),
])
def test_constraints_we_cannot_check_warn_and_keep_the_definition(ds: Path, constraint: str, expected: str) -> None:
    """FlashInfer-Bench 0.1.2 only checks a constraint's syntax: the definition stays usable."""
    edit_json(ds / DEFINITION, lambda d: d.update(constraints=[constraint]))
    assert errors(ds) == []
    assert f"ds/{DEFINITION}: {expected}" in warnings(ds)


def test_duplicate_definition_name(ds: Path) -> None:
    write_json(ds / "definitions/other/copy.json", DEF)
    assert errors(ds) == [
        "ds/definitions/rmsnorm/rmsnorm_d4096.json: name: duplicate definition name 'rmsnorm_d4096' "
        "(first in ds/definitions/other/copy.json)"
    ]


# ------------------------------------------------------------------ solutions
@pytest.mark.parametrize("change,expected", [
    (lambda s: s.update(definition="nope"), "definition: unknown definition 'nope'"),
    (lambda s: s["spec"].update(entry_point="kernel.py::run"),
     "spec.entry_point: file 'kernel.py' is not among the sources ['main.py']"),
    (lambda s: s["sources"].append({"path": "/etc/x.py", "content": "x"}),
     "sources[1].path: source path '/etc/x.py' must be relative"),
    (lambda s: s["sources"].append({"path": "../x.py", "content": "x"}),
     "sources[1].path: source path '../x.py' escapes the solution directory"),
    (lambda s: s["sources"].append({"path": "./main.py", "content": "x"}), "sources[1].path: duplicate path './main.py'"),
    (lambda s: s["sources"].append({"path": "empty.py", "content": ""}),
     "sources[1].content: empty file (FlashInfer-Bench 0.1.2 refuses it)"),
    (lambda s: s["spec"].update(target_hardware=[]), "spec.target_hardware: empty list (FlashInfer-Bench 0.1.2 needs at least one)"),
    (lambda s: s["spec"].update(entry_point="main.py:run"),
     "spec.entry_point: must be 'file::function' (exactly one '::'), got 'main.py:run'"),
])
def test_solution_checks(ds: Path, change, expected: str) -> None:
    edit_json(ds / SOLUTION, change)
    assert errors(ds) == [f"ds/{SOLUTION}: {expected}"]


def test_solution_entry_symbol_missing_is_an_error(ds: Path) -> None:
    """The build would fail: an error of the solution's file (issue 17), not a warning."""
    edit_json(ds / SOLUTION, lambda s: s["spec"].update(entry_point="main.py::forward"))
    assert errors(ds) == [f"ds/{SOLUTION}: spec.entry_point: main.py defines no top-level 'forward'"]
    assert warnings(ds) == []


def test_duplicate_solution_name(ds: Path) -> None:
    write_json(ds / "solutions/x/copy.json", SOL)
    errs = errors(ds)
    assert len(errs) == 1 and "duplicate solution name 'rmsnorm_torch'" in errs[0]


def test_a_second_baseline_author_is_named_in_both_files(ds: Path) -> None:
    """A solution names its own author: two that claim `baseline` leave the definition without
    one, and validate says so on each file (a warning: the run itself is fine)."""
    edit_json(ds / SOLUTION, lambda s: s.update(author="baseline"))
    write_json(ds / "solutions/x/rival.json", {**SOL, "name": "rival", "author": "Baseline"})
    assert errors(ds) == []
    warns = warnings(ds)
    assert len(warns) == 2, warns
    assert any(w.startswith(f"ds/{SOLUTION}: author: definition 'rmsnorm_d4096' has 2 solutions by the author "
                            "'baseline' (also rival)") for w in warns)
    assert any(w.startswith("ds/solutions/x/rival.json: author:") and "(also rmsnorm_torch)" in w for w in warns)


# ------------------------------------------------------------------ traces and layout
def _trace_lines(ds: Path, **kw: Any) -> List[dict]:
    ts = TraceSet.from_path(ds)
    wl = ts.workloads["rmsnorm_d4096"][0].workload
    return [json.loads(t.model_dump_json()) for t in traces_of_every_status("rmsnorm_d4096", wl, "rmsnorm_torch")]


def test_traces_of_every_status_validate(ds: Path) -> None:
    write_jsonl(ds / "traces/rmsnorm/rmsnorm_d4096.jsonl", _trace_lines(ds))
    assert validate_dataset(ds) == []


def test_trace_references(ds: Path) -> None:
    lines = _trace_lines(ds)[:3]
    lines[0]["definition"] = "nope"
    lines[1]["solution"] = "ghost"
    lines[2]["workload"]["uuid"] = "not-listed"
    write_jsonl(ds / "traces/rmsnorm/rmsnorm_d4096.jsonl", lines)
    t = "ds/traces/rmsnorm/rmsnorm_d4096.jsonl"
    assert errors(ds) == [f"{t}:1: definition: unknown definition 'nope'"]
    assert warnings(ds) == [
        f"{t}:2: solution: unknown solution 'ghost'",
        f"{t}:3: workload.uuid: workload 'not-listed' is not in workloads/",
    ]


def test_results_and_workloads_in_the_right_directories(ds: Path) -> None:
    lines = _trace_lines(ds)
    write_jsonl(ds / WORKLOADS, [workload_line("w1", 1), lines[3]])
    write_jsonl(ds / "traces/rmsnorm/rmsnorm_d4096.jsonl", [workload_line("w9", 1)])
    assert errors(ds) == [
        "ds/traces/rmsnorm/rmsnorm_d4096.jsonl:1: evaluation: a line in traces/ without solution and evaluation "
        "(workloads go in workloads/)",
        f"ds/{WORKLOADS}:2: solution: a workload line must have solution and evaluation null (results go in traces/)",
    ]


def test_unknown_fields_are_warnings(ds: Path) -> None:
    edit_json(ds / DEFINITION, lambda d: d.update(future_field=1, tolerance={"atol": 0.1, "atoll": 1}))
    edit_json(ds / SOLUTION, lambda s: s["spec"].update(compiler_flags=["-O3"]))
    line = workload_line("w1", 1)
    line["workload"]["new_thing"] = True
    set_workloads(ds, line)
    assert errors(ds) == []
    assert warnings(ds) == [
        f"ds/{DEFINITION}: future_field: unknown field 'future_field' (kept, ignored)",
        f"ds/{DEFINITION}: tolerance.atoll: unknown field 'atoll' (kept, ignored)",
        f"ds/{SOLUTION}: spec.compiler_flags: unknown field 'compiler_flags' (kept, ignored)",
        f"ds/{WORKLOADS}:1: workload.new_thing: unknown field 'new_thing' (kept, ignored)",
    ]


def test_all_errors_are_reported_not_only_the_first(ds: Path) -> None:
    edit_json(ds / DEFINITION, lambda d: d.update(reference="def run(a):\n    pass\n"))
    edit_json(ds / SOLUTION, lambda s: s["spec"].update(entry_point="k.py::run"))
    bad = workload_line("w3", 1)
    bad["workload"]["axes"] = {}
    set_workloads(ds, bad, workload_line("w4", -1), workload_line("w5", 1, zz={"type": "random"}))
    errs = errors(ds)
    assert len(errs) == 5, errs
    assert {e.split(":")[0] for e in errs} == {f"ds/{DEFINITION}", f"ds/{SOLUTION}", f"ds/{WORKLOADS}"}


# ------------------------------------------------------------------ the CLI
def test_cli_ok_and_failed_exit_codes(ds: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli(["validate", "--local", str(ds)]) == 0
    out = capsys.readouterr().out
    assert "ds: OK: 0 errors, 0 warnings (1 definitions, 1 solutions, 3 workloads, 0 traces)" in out

    bad = workload_line("w3", 1)
    bad["workload"]["axes"] = {}
    set_workloads(ds, workload_line("w1", 1), workload_line("w2", 2), bad)
    assert cli(["validate", "--local", str(ds)]) == 1
    out = capsys.readouterr().out
    assert "error: ds/workloads/rmsnorm/rmsnorm_d4096.jsonl:3: workload.axes: missing var axis 'batch_size'" in out
    assert "ds: FAILED: 1 error, 0 warnings" in out


def test_cli_warnings_do_not_fail(ds: Path, capsys: pytest.CaptureFixture) -> None:
    edit_json(ds / DEFINITION, lambda d: d.update(future_field=1))
    assert cli(["validate", "--local", str(ds)]) == 0
    out = capsys.readouterr().out
    assert f"warning: ds/{DEFINITION}: future_field: unknown field" in out
    assert cli(["validate", "--local", str(ds), "--no-warnings"]) == 0
    assert "warning:" not in capsys.readouterr().out


def test_cli_json_and_several_datasets(ds: Path, anchor_dataset: Path, capsys: pytest.CaptureFixture) -> None:
    set_workloads(ds, workload_line("w1", -5))
    rc = cli(["validate", "--local", str(anchor_dataset), "--local", str(ds), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 1 and report["ok"] is False
    good, bad = report["datasets"]
    assert good["ok"] and good["counts"] == {"definitions": 2, "solutions": 3, "workloads": 14, "traces": 0}
    assert not bad["ok"] and bad["errors"] == 1
    (p,) = bad["problems"]
    assert (p["path"], p["line"], p["field"], p["level"]) == (f"ds/{WORKLOADS}", 1, "workload.axes.batch_size", "error")
    assert p["message"] == "Input should be greater than or equal to 0 (got -5)"


def test_cli_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli(["validate", "--local", str(tmp_path / "nope")]) == 1
    assert "no such dataset directory or file" in capsys.readouterr().out
    assert cli(["validate", "--local", str(tmp_path)]) == 1
    assert "not a dataset" in capsys.readouterr().out


def test_cli_as_a_process(ds: Path) -> None:
    """The installed entry point, as a user runs it (python -m keeps it independent of PATH)."""
    r = subprocess.run([sys.executable, "-m", "flashinfer_bench", "validate", "--local", str(ds)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ds: OK" in r.stdout
