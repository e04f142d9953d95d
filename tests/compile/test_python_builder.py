"""Python solutions: build, load, both calling conventions, and every bad input as a result."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from flashinfer_bench.compile import COMPILE_ERROR, OK, BuildResult, build, load_runnable
from flashinfer_bench.compile import OutputMismatch

from .helpers import ADDSUB, PY_ADD, PY_ADD_DPS, VADD, solution


def _load(result: BuildResult, definition=VADD):
    assert result.status == OK, result.log
    return load_runnable(Path(result.artifact_dir), definition)


def test_value_returning_solution_runs_in_both_conventions(cache):
    r = build(solution({"main.py": PY_ADD}, "main.py::run", dps=False), VADD, cache)
    assert r.status == OK and not r.cache_hit and r.language == "python"
    run = _load(r)
    assert run.dps is False
    a, b = torch.arange(5.0), torch.ones(5)
    (c,) = run.call_value_returning(a, b)
    assert torch.equal(c, a + b)
    out = torch.full((5,), -1.0)
    assert run.call_dps(a, b, out) is None
    assert torch.equal(out, a + b)


def test_dps_solution_runs_in_both_conventions(cache):
    r = build(solution({"main.py": PY_ADD_DPS}, "main.py::run", dps=True), VADD, cache)
    run = _load(r)
    assert run.dps is True
    a, b = torch.arange(7.0), torch.full((7,), 2.0)
    (c,) = run.call_value_returning(a, b)  # outputs allocated from the definition
    assert c.shape == (7,) and c.dtype == torch.float32 and torch.equal(c, a + b)
    out = torch.zeros(7)
    run.call_dps(a, b, out)
    assert torch.equal(out, a + b)


@pytest.mark.parametrize(
    "body",
    [
        "def run(a, b):\n    return (a + b, a - b)\n",
        "def run(a, b):\n    return [a + b, a - b]\n",
        "def run(a, b):\n    return {'d': a - b, 's': a + b}\n",
    ],
    ids=["tuple", "list", "dict"],
)
def test_multi_output_returns_are_normalised(cache, body):
    run = _load(build(solution({"k.py": body}, "k.py::run", definition=ADDSUB), ADDSUB, cache), ADDSUB)
    a, b = torch.arange(4.0), torch.ones(4)
    s, d = run.call_value_returning(a, b)
    assert torch.equal(s, a + b) and torch.equal(d, a - b)
    s2, d2 = torch.empty(4), torch.empty(4)
    run.call_dps(a, b, s2, d2)
    assert torch.equal(s2, a + b) and torch.equal(d2, a - b)


def test_dps_call_of_value_returning_checks_shape_and_dtype(cache):
    wrong_shape = "def run(a, b):\n    return (a + b)[:1]\n"
    run = _load(build(solution({"k.py": wrong_shape}, "k.py::run"), VADD, cache))
    with pytest.raises(OutputMismatch) as e:
        run.call_dps(torch.ones(3), torch.ones(3), torch.empty(3))
    assert e.value.kind == "shape"
    wrong_dtype = "def run(a, b):\n    return (a + b).double()\n"
    run = _load(build(solution({"k.py": wrong_dtype}, "k.py::run"), VADD, cache))
    with pytest.raises(OutputMismatch) as e:
        run.call_dps(torch.ones(3), torch.ones(3), torch.empty(3))
    assert e.value.kind == "dtype"
    wrong_count = "def run(a, b):\n    return a + b, a - b\n"
    run = _load(build(solution({"k.py": wrong_count}, "k.py::run"), VADD, cache))
    with pytest.raises(OutputMismatch) as e:
        run.call_value_returning(torch.ones(3), torch.ones(3))
    assert e.value.kind == "count"


def test_relative_imports_between_files_work(cache):
    files = {
        "main.py": "from .impl.ops import add\n\ndef run(a, b):\n    return add(a, b)\n",
        "impl/ops.py": "def add(x, y):\n    return x + y\n",
    }
    run = _load(build(solution(files, "main.py::run"), VADD, cache))
    (c,) = run.call_value_returning(torch.ones(2), torch.ones(2))
    assert torch.equal(c, torch.full((2,), 2.0))


def test_same_file_names_do_not_collide_in_one_process(cache):
    one = solution({"kernel.py": "def run(a, b):\n    return a + b\n"}, "kernel.py::run", name="one")
    two = solution({"kernel.py": "def run(a, b):\n    return a + b + 100\n"}, "kernel.py::run", name="two")
    r1, r2 = build(one, VADD, cache), build(two, VADD, cache)
    assert r1.hash != r2.hash
    f1, f2 = _load(r1), _load(r2)
    a = torch.zeros(1)
    assert f1.call_value_returning(a, a)[0].item() == 0.0
    assert f2.call_value_returning(a, a)[0].item() == 100.0
    assert f1.fn.__module__ != f2.fn.__module__


def test_entry_file_with_dash_in_name_loads(cache):
    run = _load(build(solution({"my-kernel.py": PY_ADD}, "my-kernel.py::run"), VADD, cache))
    assert run.call_value_returning(torch.ones(1), torch.ones(1))[0].item() == 2.0


def test_manifest_records_what_the_contract_says(cache):
    r = build(solution({"main.py": PY_ADD}, "main.py::run"), VADD, cache)
    m = json.loads((Path(r.artifact_dir) / "manifest.json").read_text())
    for k in ("hash", "status", "language", "toolchain", "build_time", "build_seconds", "log"):
        assert k in m, k
    assert m["hash"] == r.hash and m["status"] == OK and m["language"] == "python"
    assert m["toolchain"]["torch"] == torch.__version__.split("+")[0] or m["toolchain"]["torch"]
    assert (Path(r.artifact_dir) / "src" / "main.py").read_text() == PY_ADD
    assert Path(r.artifact_dir).parent.name == "artifacts"


def test_build_result_round_trips_through_json():
    r = BuildResult(status="SKIPPED", hash="ab", message="needs a GPU", toolchain={"torch": "2"})
    again = BuildResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert again == r
    assert BuildResult.from_dict({**r.to_dict(), "future_field": 1}) == r
    with pytest.raises(ValueError):
        BuildResult(status="MAYBE", hash="x")


# ----------------------------------------------------------------------------- bad input
def _error(result: BuildResult) -> str:
    assert result.status == COMPILE_ERROR, result
    assert result.artifact_dir == ""
    assert result.message and result.message in result.log
    return result.message


def _nothing_published(cache: Path) -> bool:
    arts = cache / "artifacts"
    return not arts.exists() or not any(arts.iterdir())


def test_syntax_error_names_file_and_line(cache):
    src = "def run(a, b):\n    return a +\n"
    msg = _error(build(solution({"main.py": PY_ADD, "helper.py": src}, "main.py::run"), VADD, cache))
    assert msg.startswith("helper.py:2") and "SyntaxError" in msg
    assert _nothing_published(cache)


def test_missing_entry_function(cache):
    msg = _error(build(solution({"main.py": "def other(a, b):\n    return a\n"}, "main.py::run"), VADD, cache))
    assert "no function 'run'" in msg and "other" in msg


def test_missing_entry_file(cache):
    msg = _error(build(solution({"main.py": PY_ADD}, "kernel.py::run"), VADD, cache))
    assert "'kernel.py' is not among the sources" in msg


def test_import_of_missing_module(cache):
    src = "import numpy\nimport definitely_not_installed_xyz\n\ndef run(a, b):\n    return a + b\n"
    msg = _error(build(solution({"main.py": src}, "main.py::run"), VADD, cache))
    assert msg.startswith("main.py:2") and "definitely_not_installed_xyz" in msg and "not installed" in msg


def test_exception_at_import_is_a_compile_error(cache):
    src = "def run(a, b):\n    return a + b\n\nraise RuntimeError('boom at import')\n"
    msg = _error(build(solution({"main.py": src}, "main.py::run"), VADD, cache))
    assert msg.startswith("main.py:4") and "boom at import" in msg


@pytest.mark.parametrize("path", ["../x.py", "/tmp/x.py", "a/../../x.py"])
def test_source_path_escaping_the_directory(cache, path):
    s = solution({"main.py": PY_ADD, path: "y = 1\n"}, "main.py::run")
    msg = _error(build(s, VADD, cache))
    assert path in msg and ("escapes" in msg or "relative" in msg)
    assert not (cache.parent / "x.py").exists()
    assert _nothing_published(cache)


@pytest.mark.parametrize(
    "body, dps, expect",
    [
        ("def run(a):\n    return a\n", False, "takes 1 positional"),
        ("def run(a, b):\n    return a + b\n", True, "set destination_passing_style to false"),
        ("def run(a, b, c):\n    c[:] = a + b\n", False, "set destination_passing_style to true"),
        ("def run(a, b, *, scale):\n    return a + b\n", False, "keyword-only"),
    ],
    ids=["too-few", "dps-flag-wrong", "vr-flag-wrong", "kwonly"],
)
def test_signature_not_matching_the_definition(cache, body, dps, expect):
    msg = _error(build(solution({"main.py": body}, "main.py::run", dps=dps), VADD, cache))
    assert expect in msg


@pytest.mark.parametrize(
    "body, dps",
    [
        ("def run(*args):\n    return args[0] + args[1]\n", False),
        ("def run(a, *rest):\n    rest[-1][:] = a + rest[0]\n", True),
        ("def run(a, b, scale=1.0):\n    return (a + b) * scale\n", False),
    ],
    ids=["varargs", "dps-varargs", "defaulted-extra"],
)
def test_signatures_that_fit(cache, body, dps):
    run = _load(build(solution({"main.py": body}, "main.py::run", dps=dps), VADD, cache))
    assert torch.equal(run.call_value_returning(torch.ones(2), torch.ones(2))[0], torch.full((2,), 2.0))


def test_solution_for_another_definition(cache):
    msg = _error(build(solution({"main.py": PY_ADD}, "main.py::run"), ADDSUB, cache))
    assert "vadd_fp32" in msg and "addsub_fp32" in msg


def test_entry_that_is_not_callable(cache):
    msg = _error(build(solution({"main.py": "run = 3\n"}, "main.py::run"), VADD, cache))
    assert "not a function" in msg


def test_build_of_a_module_that_kills_its_process(cache):
    src = "import os\nos._exit(3)\ndef run(a, b):\n    return a + b\n"
    msg = _error(build(solution({"main.py": src}, "main.py::run"), VADD, cache))
    assert "exit code 3" in msg
    assert _nothing_published(cache)


def test_build_that_hangs_times_out(cache):
    src = "import time\ntime.sleep(60)\ndef run(a, b):\n    return a + b\n"
    msg = _error(build(solution({"main.py": src}, "main.py::run"), VADD, cache, timeout_s=3))
    assert "timed out after 3 s" in msg
    assert _nothing_published(cache)
