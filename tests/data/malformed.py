"""A corpus of malformed dataset files (issue 17), one case per way a file can be wrong.

Each case breaks one file of a small valid dataset (two definitions, three solutions, four
workloads) and says where the error must be reported (file, line, field, words of the message)
and what it may cost: the definition, solution or workload the bad file is, or nothing that the
run evaluates. `tests/data/test_malformed.py` checks each case through `validate` (API and CLI)
and the run's plan; `tests/pipeline/test_malformed_run.py` runs some of them for real.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from .dsbuild import DEF, DEFINITION, SOL, SOLUTION, WORKLOADS, make_dataset, workload_line, write_json, write_jsonl

# the base dataset beyond dsbuild's: a second solution of rmsnorm_d4096, and a second definition
# with its own solution and workload
SOLUTION_B = "solutions/tests/rmsnorm/rmsnorm_d4096/rmsnorm_torch_b.json"
DEF2_NAME = "rmsnorm_d128"
DEFINITION2 = f"definitions/rmsnorm/{DEF2_NAME}.json"
SOLUTION2 = f"solutions/tests/rmsnorm/{DEF2_NAME}/small_torch.json"
WORKLOADS2 = f"workloads/rmsnorm/{DEF2_NAME}.jsonl"
TRACES = "traces/rmsnorm/rmsnorm_d4096.jsonl"

BRACES_DEFINITION = "definitions/rmsnorm/rmsnorm_{x}.json"
FILES = {"def": DEFINITION, "sol": SOLUTION, "wl": WORKLOADS, "trace": TRACES, "def2": DEFINITION2,
         "braces": BRACES_DEFINITION}

VALUE_RETURNING = "import torch\n\ndef run(x, weight, eps):\n    return x * weight\n"


def make_base(root: Path) -> Path:
    """dsbuild's dataset plus SOLUTION_B and the rmsnorm_d128 definition, solution, workload."""
    make_dataset(root)
    sol = json.loads((root / SOLUTION).read_text())
    sol["sources"][0]["content"] = VALUE_RETURNING
    write_json(root / SOLUTION, sol)
    write_json(root / SOLUTION_B, {**sol, "name": "rmsnorm_torch_b"})
    d2 = copy.deepcopy(DEF)
    d2["name"] = DEF2_NAME
    d2["axes"]["hidden_size"]["value"] = 128
    write_json(root / DEFINITION2, d2)
    write_json(root / SOLUTION2, {**sol, "name": "small_torch", "definition": DEF2_NAME})
    line = workload_line("o1", 2)
    line["definition"] = DEF2_NAME
    write_jsonl(root / WORKLOADS2, [line])
    return root


def base_jobs() -> List[Tuple[str, str, str]]:
    """(definition, solution, workload uuid) of every job the base dataset gives on the CPU."""
    return sorted(
        [("rmsnorm_d4096", s, u) for s in ("rmsnorm_torch", "rmsnorm_torch_b") for u in ("w1", "w8", "wst")]
        + [(DEF2_NAME, "small_torch", "o1")]
    )


# ------------------------------------------------------------------ editing helpers
def _edit_json(rel: str, change: Callable[[Any], Any]) -> Callable[[Path], None]:
    def f(root: Path) -> None:
        obj = json.loads((root / rel).read_text())
        change(obj)
        write_json(root / rel, obj)

    return f


def _raw(rel: str, text: str) -> Callable[[Path], None]:
    def f(root: Path) -> None:
        (root / rel).write_text(text)

    return f


def _def(change: Callable[[Dict[str, Any]], Any]) -> Callable[[Path], None]:
    return _edit_json(DEFINITION, change)


def _sol(change: Callable[[Dict[str, Any]], Any]) -> Callable[[Path], None]:
    return _edit_json(SOLUTION, change)


def _spec(**kw: Any) -> Callable[[Path], None]:
    return _sol(lambda s: s["spec"].update(kw))


def _source(content: str, path: str = "main.py") -> Callable[[Path], None]:
    def change(s: Dict[str, Any]) -> None:
        s["sources"] = [{"path": path, "content": content}]
        s["spec"]["entry_point"] = f"{path}::run"

    return _sol(change)


def _extra_source(path: str, content: str = "X = 1\n") -> Callable[[Path], None]:
    return _sol(lambda s: s["sources"].append({"path": path, "content": content}))


def _wl_line(n: int, change: Callable[[Dict[str, Any]], Any]) -> Callable[[Path], None]:
    """Change line n (1-based) of the rmsnorm_d4096 workloads file."""

    def f(root: Path) -> None:
        lines = (root / WORKLOADS).read_text().splitlines()
        obj = json.loads(lines[n - 1])
        change(obj)
        lines[n - 1] = json.dumps(obj)
        (root / WORKLOADS).write_text("\n".join(lines) + "\n")

    return f


def _wl_raw(n: int, text: str) -> Callable[[Path], None]:
    def f(root: Path) -> None:
        lines = (root / WORKLOADS).read_text().splitlines()
        lines[n - 1] = text
        (root / WORKLOADS).write_text("\n".join(lines) + "\n")

    return f


def _axes(**kw: Any) -> Callable[[Path], None]:
    return _wl_line(1, lambda o: o["workload"]["axes"].update(kw))


def _input(name: str, spec: Any) -> Callable[[Path], None]:
    return _wl_line(1, lambda o: o["workload"]["inputs"].__setitem__(name, spec))


def _blob(path: str) -> Callable[[Path], None]:
    return _input("x", {"type": "safetensors", "path": path, "tensor_key": "x"})


def trace_line(uuid: str = "w1", solution: str = "rmsnorm_torch", **env: Any) -> Dict[str, Any]:
    """A PASSED result line as our run writes it (environment fields of a CPU run included)."""
    return {
        "definition": "rmsnorm_d4096", "solution": solution,
        "workload": {"axes": {"batch_size": 1}, "inputs": {"x": {"type": "random"}, "weight": {"type": "random"},
                                                            "eps": {"type": "scalar", "value": 1e-6}}, "uuid": uuid},
        "evaluation": {
            "status": "PASSED", "timestamp": "2026-11-23T12:00:00Z", "log": "",
            "environment": {"hardware": "CPU test", "libs": {"torch": "2"}, "device": "cpu", "device_index": 0,
                            "cpu_count": 2, "torch_threads": 1, "hostname": "h", "worker_pid": 7, "seed": 0,
                            "sandbox": "none", **env},
            "correctness": {"max_relative_error": 0.0, "max_absolute_error": 0.0, "extra": {}},
            "performance": {"latency_ms": 0.01, "reference_latency_ms": 0.02, "speedup_factor": 2.0},
        },
    }


def _traces(*lines: Any) -> Callable[[Path], None]:
    """traces/ with these lines (bytes are written as they are)."""

    def f(root: Path) -> None:
        p = root / TRACES
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"".join((x if isinstance(x, bytes) else json.dumps(x).encode()) + b"\n" for x in lines))

    return f


def _move(src: str, dst: str) -> Callable[[Path], None]:
    def f(root: Path) -> None:
        (root / src).rename(root / dst)

    return f


def _all(*fs: Callable[[Path], None]) -> Callable[[Path], None]:
    def f(root: Path) -> None:
        for g in fs:
            g(root)

    return f


# ------------------------------------------------------------------ the corpus
@dataclass
class Case:
    id: str
    klass: str
    apply: Callable[[Path], None]
    file: str                      # key of FILES: the file every error names
    line: Optional[int]            # its line (JSONL), or None
    field: Optional[str]           # the field path the (first) error names
    words: str                     # words of its message
    costs: Tuple[str, ...] = ()    # what the plan drops: "def:<name>", "sol:<name>", "wl:<uuid>"
    level: str = "error"
    notes: Dict[str, Any] = field(default_factory=dict)


WL_ALL = ("wl:w1", "wl:w8", "wl:wst")
DEF1 = ("def:rmsnorm_d4096",)
SOL1 = ("sol:rmsnorm_torch",)
W1 = ("wl:w1",)
BIG = "1" + "0" * 5000
FOUR_ARGS = "def run(x, weight, eps, n):\n    return x\n"

CASES: List[Case] = [
    # --- expressions: ** and big numbers are bounded, every failure is the dataset's
    Case("constraint_tower_of_powers", "expressions", _def(lambda d: d.update(constraints=["9**9**9**9 > batch_size"])),
         "wl", 1, "workload.axes", "exponent 387420489 is larger than 256", WL_ALL),
    Case("constraint_huge_list", "expressions", _def(lambda d: d.update(constraints=["len([0] * 2**40) > 0"])),
         "wl", 1, "workload.axes", "a sequence of 1099511627776 elements", WL_ALL),
    Case("constraint_type_error", "expressions", _def(lambda d: d.update(constraints=["batch_size + [1] > 0"])),
         "wl", 1, "workload.axes", "TypeError: unsupported operand", WL_ALL),
    Case("constraint_nested_too_deeply", "expressions", _def(lambda d: d.update(constraints=["-" * 3000 + "batch_size > 0"])),
         "def", None, "constraints[0]", "nested too deeply", DEF1),
    Case("constraint_5000_digit_literal", "expressions", _def(lambda d: d.update(constraints=[f"batch_size < {BIG}"])),
         "def", None, "constraints[0]", "not an expression: Exceeds the limit (4300 digits)", DEF1),
    Case("constraint_5000_characters", "expressions", _def(lambda d: d.update(constraints=["batch_size > 0 and " * 300 + "1"])),
         "def", None, "constraints[0]", "cannot be checked: longer than 4096 characters", level="warning"),
    Case("flops_tower_of_powers", "expressions", _def(lambda d: d.update(flops="batch_size ** 99999999")),
         "wl", 1, "workload.axes", "flops 'batch_size ** 99999999' cannot be counted for these axes: exponent", WL_ALL),
    Case("flops_division_by_zero", "expressions", _def(lambda d: d.update(flops="batch_size / (hidden_size - 4096)")),
         "wl", 1, "workload.axes", "division by zero", WL_ALL),
    Case("flops_not_a_number", "expressions", _def(lambda d: d.update(flops="(batch_size, hidden_size)")),
         "wl", 1, "workload.axes", "gives a tuple, not a number", WL_ALL),
    Case("flops_a_comparison", "expressions", _def(lambda d: d.update(flops="batch_size > 1")),
         "wl", 1, "workload.axes", "gives a bool, not a number", WL_ALL),
    Case("flops_5000_digit_literal", "expressions", _def(lambda d: d.update(flops=f"batch_size * {BIG}")),
         "def", None, "flops", "longer than 4096 characters (5014)", DEF1),
    Case("flops_tag_division_by_zero", "expressions", _def(lambda d: d["tags"].append("flops:batch_size // 0")),
         "wl", 1, "workload.axes", "flops 'flops:batch_size // 0' cannot be counted", WL_ALL),
    # --- source paths of a solution
    Case("source_path_dot", "paths", _extra_source("."), "sol", None, "sources[1].path", "source path '.' names no file", SOL1),
    Case("source_path_dot_slash", "paths", _extra_source("./"), "sol", None, "sources[1].path", "names no file", SOL1),
    Case("source_path_nul", "paths", _extra_source("a\x00b.py"), "sol", None, "sources[1].path", "control character U+0000", SOL1),
    Case("source_path_newline", "paths", _extra_source("a\nb.py"), "sol", None, "sources[1].path", "control character U+000A", SOL1),
    Case("source_path_5000_chars", "paths", _extra_source("a" * 5000 + ".py"), "sol", None, "sources[1].path", "is 5003 bytes long", SOL1),
    Case("source_path_long_component", "paths", _extra_source("d/" + "a" * 300 + ".py"), "sol", None, "sources[1].path",
         "has a component of 303 bytes", SOL1),
    Case("source_path_lone_surrogate", "paths", _extra_source("a\ud800.py"), "sol", None, "sources[1].path", "unable to parse raw data as a unicode string", SOL1),
    Case("source_path_escapes", "paths", _extra_source("../../x.py"), "sol", None, "sources[1].path", "escapes the solution directory", SOL1),
    Case("source_path_file_and_directory", "paths", _all(_extra_source("lib"), _extra_source("lib/util.py")), "sol", None,
         "sources[1].path", "'lib' is also the directory of another source", SOL1),
    Case("entry_file_dot", "paths", _spec(entry_point=".::run"), "sol", None, "spec.entry_point", "file '.' is not among the sources", SOL1),
    # --- blob paths of a workload
    Case("blob_path_nul", "paths", _blob("blob/a\x00.safetensors"), "wl", 1, "workload.inputs.x.path", "control character U+0000", W1),
    Case("blob_path_5000_chars", "paths", _blob("b" * 5000), "wl", 1, "workload.inputs.x.path", "is 5000 bytes long", W1),
    Case("blob_path_long_component", "paths", _blob("blob/" + "b" * 300), "wl", 1, "workload.inputs.x.path", "component of 300 bytes", W1),
    Case("blob_path_dot", "paths", _blob("."), "wl", 1, "workload.inputs.x.path", "names no file", W1),
    Case("blob_path_a_directory", "paths", _blob("blob"), "wl", 1, "workload.inputs.x.path", "file 'blob' not found", W1),
    # --- names the run makes files of
    Case("solution_name_dotdot", "names", _sol(lambda s: s.update(name="../evil")), "sol", None, "name", "contains a path separator", SOL1),
    Case("solution_name_slash", "names", _sol(lambda s: s.update(name="a/b")), "sol", None, "name", "contains a path separator", SOL1),
    Case("solution_name_dot", "names", _sol(lambda s: s.update(name=".")), "sol", None, "name", "names a directory", SOL1),
    Case("solution_name_nul", "names", _sol(lambda s: s.update(name="a\x00")), "sol", None, "name", "control character U+0000", SOL1),
    Case("solution_name_300_bytes", "names", _sol(lambda s: s.update(name="é" * 150)), "sol", None, "name", "is 300 bytes long", SOL1),
    Case("solution_author_slash", "names", _sol(lambda s: s.update(author="org/team")), "sol", None, "author", "path separator", SOL1),
    Case("solution_definition_dotdot", "names", _sol(lambda s: s.update(definition="../rmsnorm_d4096")), "sol", None,
         "definition", "path separator", SOL1),
    Case("definition_name_slash", "names", _def(lambda d: d.update(name="rms/norm")), "def", None, "name", "path separator", DEF1),
    Case("definition_op_type_dotdot", "names", _def(lambda d: d.update(op_type="../../outside")), "def", None, "op_type",
         "path separator", DEF1),
    Case("solution_name_braces", "names", _sol(lambda s: s.update(name="fast{v2}")), "sol", None, "name",
         "contains '{' or '}', which the run's workflow (Snakemake) reads as a wildcard", SOL1),
    Case("workload_uuid_braces", "names", _wl_line(1, lambda o: o["workload"].update(uuid="{uuid}")), "wl", 1,
         "workload.uuid", "reads as a wildcard", W1),
    Case("definition_file_name_braces", "names", _move(DEFINITION, BRACES_DEFINITION), "braces", None, None,
         "the file name contains '{' or '}'", DEF1),
    Case("workload_uuid_dotdot", "names", _wl_line(1, lambda o: o["workload"].update(uuid="../../x")), "wl", 1,
         "workload.uuid", "path separator", W1),
    Case("workload_uuid_dotdot_only", "names", _wl_line(1, lambda o: o["workload"].update(uuid="..")), "wl", 1,
         "workload.uuid", "names a directory", W1),
    Case("workload_uuid_5000_chars", "names", _wl_line(1, lambda o: o["workload"].update(uuid="u" * 5000)), "wl", 1,
         "workload.uuid", "is 5000 bytes long", W1),
    # --- null where an object or a value belongs
    Case("definition_file_null", "null", _raw(DEFINITION, "null\n"), "def", None, None, "expected a JSON object, got null", DEF1),
    Case("solution_file_null", "null", _raw(SOLUTION, "null"), "sol", None, None, "expected a JSON object, got null", SOL1),
    Case("definition_file_empty", "null", _raw(DEFINITION, ""), "def", 1, None, "invalid JSON", DEF1),
    Case("workload_line_null", "null", _wl_raw(1, "null"), "wl", 1, None, "expected a JSON object, got null", W1),
    Case("definition_outputs_null", "null", _def(lambda d: d.update(outputs=None)), "def", None, "outputs", "valid dictionary", DEF1),
    Case("solution_sources_null", "null", _sol(lambda s: s.update(sources=None)), "sol", None, "sources", "valid list", SOL1),
    Case("solution_spec_null", "null", _sol(lambda s: s.update(spec=None)), "sol", None, "spec", "valid dictionary", SOL1),
    Case("solution_content_null", "null", _sol(lambda s: s["sources"][0].update(content=None)), "sol", None,
         "sources[0].content", "valid string", SOL1),
    Case("solution_dps_null", "null", _spec(destination_passing_style=None), "sol", None, "spec.destination_passing_style",
         "must be true or false, not null", SOL1),
    Case("workload_uuid_null", "null", _wl_line(1, lambda o: o["workload"].update(uuid=None)), "wl", 1, "workload.uuid",
         "valid string", W1),
    Case("workload_input_null", "null", _input("x", None), "wl", 1, "workload.inputs.x", "input 'type' must be", W1),
    # --- numbers: as JSON gives them, finite, in range
    Case("const_axis_string", "numbers", _def(lambda d: d["axes"]["hidden_size"].update(value="4096")), "def", None,
         "axes.hidden_size.value", "must be an integer, not the string '4096'", DEF1),
    Case("const_axis_float", "numbers", _def(lambda d: d["axes"]["hidden_size"].update(value=4096.0)), "def", None,
         "axes.hidden_size.value", "must be an integer, not the number 4096.0", DEF1),
    Case("const_axis_bool", "numbers", _def(lambda d: d["axes"]["hidden_size"].update(value=True)), "def", None,
         "axes.hidden_size.value", "not the boolean true", DEF1),
    Case("const_axis_beyond_int64", "numbers", _def(lambda d: d["axes"]["hidden_size"].update(value=2**64)), "def", None,
         "axes.hidden_size.value", "less than or equal to 9223372036854775807", DEF1),
    Case("const_axis_zero", "numbers", _def(lambda d: d["axes"]["hidden_size"].update(value=0)), "def", None,
         "axes.hidden_size.value", "every tensor it shapes would be empty (x, weight, out)", DEF1),
    Case("workload_axis_string", "numbers", _axes(batch_size="4096"), "wl", 1, "workload.axes.batch_size",
         "must be an integer, not the string '4096'", W1),
    Case("workload_axis_float", "numbers", _axes(batch_size=2.0), "wl", 1, "workload.axes.batch_size", "not the number 2.0", W1),
    Case("workload_axis_bool", "numbers", _axes(batch_size=True), "wl", 1, "workload.axes.batch_size", "not the boolean true", W1),
    Case("workload_axis_4000_digits", "numbers", _axes(batch_size=10**3999), "wl", 1, "workload.axes.batch_size",
         "less than or equal to 9223372036854775807", W1),
    Case("workload_5000_digit_literal", "numbers", _wl_raw(1, '{"definition": "rmsnorm_d4096", "workload": {"uuid": "w1", '
                                                          f'"axes": {{"batch_size": {BIG}}}, "inputs": {{}}}}}}'),
         "wl", 1, None, "a number too long to read", W1),
    Case("definition_5000_digit_literal", "numbers", _raw(DEFINITION, json.dumps(DEF).replace('"value": 4096', f'"value": {BIG}')),
         "def", None, None, "a number too long to read", DEF1),
    Case("tolerance_infinite", "numbers", _raw(DEFINITION, json.dumps({**DEF, "tolerance": {"atol": "INF"}}).replace('"INF"', "Infinity")),
         "def", None, "tolerance.atol", "finite number", DEF1),
    Case("tolerance_1e999", "numbers", _raw(DEFINITION, json.dumps({**DEF, "tolerance": {"rtol": "X"}}).replace('"X"', "1e999")),
         "def", None, "tolerance.rtol", "finite number", DEF1),
    Case("tolerance_nan", "numbers", _raw(DEFINITION, json.dumps({**DEF, "tolerance": {"atol": "X"}}).replace('"X"', "NaN")),
         "def", None, "tolerance.atol", "(got nan)", DEF1),
    Case("tolerance_string", "numbers", _def(lambda d: d.update(tolerance={"atol": "0.1"})), "def", None, "tolerance.atol",
         "must be a number, not the string '0.1'", DEF1),
    Case("dps_string", "numbers", _spec(destination_passing_style="false"), "sol", None, "spec.destination_passing_style",
         "must be true or false, not the string 'false'", SOL1),
    Case("dps_zero", "numbers", _spec(destination_passing_style=0), "sol", None, "spec.destination_passing_style",
         "not the number 0", SOL1),
    Case("scalar_beyond_its_dtype", "numbers",
         _all(_def(lambda d: (d["inputs"].update(n={"shape": None, "dtype": "int32"}), d.update(reference=FOUR_ARGS))),
              _sol(lambda s: s["sources"][0].update(content=FOUR_ARGS)),
              _edit_json(SOLUTION_B, lambda s: s["sources"][0].update(content=FOUR_ARGS)),
              _wl_line(1, lambda o: o["workload"]["inputs"].update(n={"type": "scalar", "value": 2**40})),
              _wl_line(2, lambda o: o["workload"]["inputs"].update(n={"type": "scalar", "value": 3})),
              _wl_line(3, lambda o: o["workload"]["inputs"].update(n={"type": "scalar", "value": 3}))),
         "wl", 1, "workload.inputs.n.value", "outside the range of int32", W1),
    Case("scalar_infinite", "numbers", _wl_raw(1, json.dumps(workload_line("w1", 1, eps={"type": "scalar", "value": "X"})).replace('"X"', "Infinity")),
         "wl", 1, "workload.inputs.eps.value", "value inf is not a finite number", W1),
    Case("scalar_string_number", "numbers", _input("eps", {"type": "scalar", "value": "1e-6"}), "wl", 1, "workload.inputs.eps.value",
         "not the string '1e-6'", W1),
    # --- shapes and tensors
    Case("definition_without_outputs", "shapes", _def(lambda d: d.update(outputs={})), "def", None, "outputs", "no outputs", DEF1),
    # --- entry functions and signatures (Python solutions), before anything is built
    Case("run_takes_too_few", "signatures", _source("def run(x, weight):\n    return x\n"), "sol", None, "spec.entry_point",
         "entry run(x, weight) takes 2 positional parameter(s), but destination_passing_style is false, so it is called with 3",
         SOL1),
    Case("run_takes_too_many", "signatures", _source("def run(x, weight, eps, out, extra):\n    return x\n"), "sol", None,
         "spec.entry_point", "takes 5 positional parameter(s)", SOL1),
    Case("run_required_keyword", "signatures", _source("def run(x, weight, eps, *, mode):\n    return x\n"), "sol", None,
         "spec.entry_point", "required keyword-only parameters ['mode']", SOL1),
    Case("dps_but_value_returning", "signatures", _spec(destination_passing_style=True), "sol", None, "spec.entry_point",
         "set destination_passing_style to false if that is how it works", SOL1),
    Case("value_returning_but_takes_outputs", "signatures", _source("def run(x, weight, eps, out):\n    out.copy_(x)\n"), "sol", None,
         "spec.entry_point", "set destination_passing_style to true if that is how it works", SOL1),
    Case("entry_function_missing", "signatures", _spec(entry_point="main.py::forward"), "sol", None, "spec.entry_point",
         "main.py defines no top-level 'forward'", SOL1),
    Case("entry_function_not_a_name", "signatures", _spec(entry_point="main.py::run-fast"), "sol", None, "spec.entry_point",
         "'run-fast' is not a function name", SOL1),
    Case("entry_function_only_nested", "signatures", _source("def outer():\n    def run(x, weight, eps):\n        return x\n"),
         "sol", None, "spec.entry_point", "main.py defines no top-level 'run'", SOL1),
    Case("entry_file_not_python", "signatures", _source("def run(x, weight, eps):\n    return x\n", path="main.txt"), "sol", None,
         "spec.entry_point", "main.txt is not a .py file", SOL1),
    Case("entry_syntax_error", "signatures", _source("def run(x, weight, eps)\n    return x\n"), "sol", None, "sources[0].content",
         "main.py:1: syntax error", SOL1),
    Case("helper_syntax_error", "signatures", _extra_source("helper.py", "def f(:\n"), "sol", None, "sources[1].content",
         "helper.py:1: syntax error", SOL1),
    Case("source_nul_byte", "signatures", _source("def run(x, weight, eps):\n    return x\n\x00"), "sol", None, "sources[0].content",
         "null bytes", SOL1),
    Case("source_lone_surrogate", "signatures", _source("def run(x, weight, eps):\n    return '\ud800'\n"), "sol", None,
         "sources[0].content", "not UTF-8 text", SOL1),
    Case("source_nested_too_deeply", "signatures", _source("x = " + "-" * 100000 + "1\ndef run(x, weight, eps):\n    return x\n"),
         "sol", None, "sources[0].content", "main.py", SOL1),
    Case("reference_nul_byte", "signatures", _def(lambda d: d.update(reference=d["reference"] + "\x00")), "def", None, "reference",
         "null bytes", DEF1),
    Case("reference_lone_surrogate", "signatures", _def(lambda d: d.update(reference=d["reference"] + "'\ud800'\n")), "def", None,
         "reference", "unable to parse raw data as a unicode string", DEF1),
    # --- traces: a bad line is that line's error; the others load, the run keeps it as it is
    Case("traces_line_not_utf8", "traces", _traces(trace_line("w1"), b'{"definition": "\xff\xfe"}', trace_line("w8")),
         "trace", 2, None, "cannot read this line: not UTF-8 text (byte 0xff at byte 17)"),
    Case("traces_line_not_json", "traces", _traces(trace_line("w1"), b"{not json", trace_line("w8")), "trace", 2, None, "invalid JSON"),
    Case("traces_line_null", "traces", _traces(b"null", trace_line("w8")), "trace", 1, None, "expected a JSON object, got null"),
    Case("traces_line_5000_digits", "traces", _traces(trace_line("w1"), b'{"x": ' + BIG.encode() + b"}"), "trace", 2, None,
         "a number too long to read"),
    Case("traces_solution_dotdot", "traces", _traces(trace_line("w1", solution="../x")), "trace", 1, "solution", "path separator"),
]


def make_case(root: Path, case: Case) -> Path:
    make_base(root)
    case.apply(root)
    return root
