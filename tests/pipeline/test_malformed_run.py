"""Issue 17, end to end: one bad file costs only what depends on it.

A real `flashinfer-bench run --device cpu` over a dataset with several malformed files from the
corpus (tests/data/malformed.py) beside good ones: the run does not abort; every bad file is
reported with its file(:line) and field; what does not depend on a bad file is benchmarked, what
does gets no trace (nothing is charged to a solution); a traces line that is not UTF-8 and a
foreign trace survive aggregation byte for byte; the exit status is 3 (0 with
--ignore-dataset-errors). Names with spaces, quotes, glob characters and a leading dash are valid
and run like any other; braces (Snakemake's wildcards) are an error of the file that holds them.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.data.dsbuild import DEFINITION, SOLUTION, WORKLOADS, write_json
from tests.data.malformed import DEFINITION2, SOLUTION_B, TRACES, WORKLOADS2, make_base, trace_line

pytestmark = pytest.mark.slow

ODD = "odd name 'q' $(id) *? [a] é -rf"  # valid: one path component; the shell and Snakemake must cope


def _dataset(root: Path) -> Path:
    ds = make_base(root / "ds")
    # 1. a source path "." in rmsnorm_torch (was a traceback that aborted every solution's run)
    sol = json.loads((ds / SOLUTION).read_text())
    sol["sources"].append({"path": ".", "content": "x = 1\n"})
    write_json(ds / SOLUTION, sol)
    # 2. the second solution renamed to an odd but valid name
    solb = json.loads((ds / SOLUTION_B).read_text())
    solb["name"] = ODD
    write_json(ds / SOLUTION_B, solb)
    # 3. a third solution whose run does not take the definition's inputs (was the solution's COMPILE_ERROR)
    write_json(ds / "solutions/tests/rmsnorm/rmsnorm_d4096/short_run.json",
               {**sol, "name": "short_run", "sources": [{"path": "main.py", "content": "def run(x):\n    return x\n"}]})
    # 4. workload line 2 (w8) with a uuid that leaves the results directory (aborted the run)
    lines = (ds / WORKLOADS).read_text().splitlines()
    w8 = json.loads(lines[1])
    w8["workload"]["uuid"] = "../../escape"
    lines[1] = json.dumps(w8)
    # 5. a valid workload with an odd uuid
    odd = json.loads(lines[0])
    odd["workload"]["uuid"] = "-rf 'x' ü"
    (ds / WORKLOADS).write_text("\n".join(lines + [json.dumps(odd)]) + "\n")
    # 6. the second definition's flops cannot be counted (hung, then crashed the plan)
    d2 = json.loads((ds / DEFINITION2).read_text())
    d2["flops"] = "batch_size ** 10**9"
    write_json(ds / DEFINITION2, d2)
    # 7. a definition file that is just null (was skipped silently)
    (ds / "definitions/rmsnorm/nothing.json").write_text("null\n")
    # 8. braces, which Snakemake reads as wildcards (aborted the run): in a solution's name (its
    #    error message then holds them too) and in a solution's file name
    write_json(ds / "solutions/tests/rmsnorm/rmsnorm_d4096/braces.json", {**solb, "name": "fast{v2}"})
    write_json(ds / "solutions/tests/rmsnorm/rmsnorm_d4096/sol{v3}.json", {**solb, "name": "v3"})
    # 9. traces/: a foreign trace (another machine's) and a line that is not UTF-8 (aggregation
    #    failed on it, in this run and every later one)
    (ds / TRACES).parent.mkdir(parents=True)
    foreign = json.dumps(trace_line("w1", solution="rmsnorm_torch_b", hardware="GPU elsewhere")).encode()
    (ds / TRACES).write_bytes(foreign + b"\n" + b'{"definition": "\xff"}' + b"\n")
    return ds


def test_one_bad_file_costs_only_what_depends_on_it(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    before = (ds / TRACES).read_bytes().split(b"\n")
    env = {**os.environ, "FIB_CACHE_PATH": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "flashinfer_bench.cli.main", "run", "--local", str(ds), "--device", "cpu",
           "--results", str(tmp_path / "results"), "--cores", "2", "--num-trials", "1", "--iterations", "5",
           "--warmup-runs", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 3, out[-4000:]
    assert "Traceback" not in out, out[-4000:]
    for where in (f"{SOLUTION}: sources[1].path: source path '.' names no file",
                  "short_run.json: spec.entry_point: main.py:1: entry run(x) takes 1 positional parameter(s)",
                  f"{WORKLOADS}:2: workload.uuid: '../../escape' contains a path separator",
                  f"{WORKLOADS2}:1: workload.axes: the definition's flops 'batch_size ** 10**9' cannot be counted",
                  "definitions/rmsnorm/nothing.json: expected a JSON object, got null",
                  "braces.json: name: 'fast{v2}' contains '{' or '}'",
                  "sol{v3}.json: the file name contains '{' or '}'",
                  f"{TRACES}:2: cannot read this line: not UTF-8 text"):
        assert where in out, (where, out[-4000:])
    assert "has 8 error(s)" in out, out[-2000:]

    # what does not depend on a bad file was benchmarked; nothing was charged to a solution
    lines = (ds / TRACES).read_bytes().split(b"\n")
    assert before[0] in lines and before[1] in lines  # the foreign trace and the unreadable line, as they were
    ours = [json.loads(x) for x in lines if x and x not in before]
    got = sorted((t["solution"], t["workload"]["uuid"]) for t in ours)
    assert got == sorted((ODD, u) for u in ("w1", "wst", "-rf 'x' ü")), got
    assert not (ds / "traces" / "rmsnorm" / "rmsnorm_d128.jsonl").exists()
    assert not list(tmp_path.glob("escape*")) and not list((tmp_path / "results").rglob("escape*"))

    # the next run is not blocked by the unreadable line, and --ignore-dataset-errors exits 0
    r2 = subprocess.run(cmd + ["--ignore-dataset-errors"], capture_output=True, text=True, env=env, cwd=tmp_path,
                        timeout=900)
    assert r2.returncode == 0, (r2.stdout + r2.stderr)[-3000:]
    assert (ds / TRACES).read_bytes().split(b"\n").count(before[1]) == 1
