"""Issue 17: no input that `validate` accepts can hang, crash or abort a run.

Over a corpus of malformed files (tests/data/malformed.py: expressions, paths, names, nulls,
numbers, shapes, entry functions and signatures, traces lines), each case must be an error (or the
stated warning) naming the file, its line and the field, through the public API and the CLI; and
the run's plan (what `flashinfer-bench run` and the Snakefile build the DAG from) must not raise,
must report the same problem, and must drop only what depends on the bad file.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import List

import pytest

from flashinfer_bench.cli.main import main as cli
from flashinfer_bench.data import TraceSet
from flashinfer_bench.data.io import Problem
from flashinfer_bench.data.validate import validate_dataset
from flashinfer_bench.pipeline.plan import benchmark_params, build_plan, definition_digest, unreadable_trace_lines

from .dsbuild import DEFINITION, SOLUTION, WORKLOADS
from .malformed import CASES, FILES, SOLUTION_B, TRACES, Case, base_jobs, make_base, make_case, trace_line

# files whose problems may follow from a bad definition (checked against it, or naming it)
DEPENDANTS = {"def": {WORKLOADS, SOLUTION, SOLUTION_B}}


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _hits(problems: List[Problem], case: Case) -> List[Problem]:
    path = f"ds/{FILES[case.file]}"
    return [
        p for p in problems
        if p.level == case.level and p.path == path and p.line == case.line and p.field == case.field
        and case.words in p.message
    ]


def test_the_base_dataset_is_clean_and_gives_every_job(here: Path) -> None:
    make_base(Path("ds"))
    assert validate_dataset(Path("ds")) == []
    plan = build_plan(Path("ds"), "cpu")
    assert plan.problems == []
    assert sorted((j.definition, j.solution, j.uuid) for j in plan.jobs) == base_jobs()


def test_the_corpus_covers_every_class_named_in_the_issue() -> None:
    classes = {c.klass for c in CASES}
    assert classes == {"expressions", "paths", "names", "null", "numbers", "shapes", "signatures", "traces"}
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_validate_names_file_line_and_field(here: Path, case: Case, capsys: pytest.CaptureFixture) -> None:
    ds = make_case(Path("ds"), case)
    t0 = time.monotonic()
    problems = validate_dataset(ds)
    assert time.monotonic() - t0 < 30, "validate must not hang"
    hits = _hits(problems, case)
    assert hits, f"expected {case.level} at ds/{FILES[case.file]}:{case.line} {case.field}: ...{case.words}...\n" + "\n".join(
        f"{p.level}: {p}" for p in problems
    )
    # no error elsewhere, except in what depends on the bad file
    allowed = {f"ds/{FILES[case.file]}"} | {f"ds/{f}" for f in DEPENDANTS.get(case.file, ())}
    assert [str(p) for p in problems if p.path not in allowed] == []
    if case.level == "warning":
        assert [p for p in problems if p.level == "error"] == []

    # the CLI prints the same problem and fails (or passes, for a warning), without a traceback
    capsys.readouterr()
    rc = cli(["validate", "--local", "ds"])
    out = capsys.readouterr()
    assert rc == (1 if case.level == "error" else 0), out.out
    assert f"{case.level}: {hits[0]}" in out.out.splitlines()
    assert "Traceback" not in out.out + out.err


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_runs_plan_drops_only_what_depends_on_the_bad_file(here: Path, case: Case) -> None:
    ds = make_case(Path("ds"), case)
    t0 = time.monotonic()
    plan = build_plan(ds, "cpu")
    assert time.monotonic() - t0 < 30, "planning must not hang"

    def lost(job) -> bool:
        d, s, u = job
        return f"def:{d}" in case.costs or f"sol:{s}" in case.costs or (d == "rmsnorm_d4096" and f"wl:{u}" in case.costs)

    assert sorted((j.definition, j.solution, j.uuid) for j in plan.jobs) == [j for j in base_jobs() if not lost(j)]
    # the Snakefile's next step works on what is left (file names from names, quoted params)
    digests = {n: definition_digest(d) for n, d in plan.definitions.items()}
    assert len(benchmark_params(plan, {}, digests, "results")) == len(plan.jobs)

    if case.file == "trace":  # not read by the plan: the run reports unreadable lines itself
        assert plan.problems == []
        if case.field is None:
            assert _hits(unreadable_trace_lines(ds), case)
        return
    if case.level == "warning":
        assert plan.errors == []
        return
    # the run reports the problem as validate does, once per bad entry
    assert _hits(plan.problems, case), "\n".join(map(str, plan.problems))
    allowed = {f"ds/{FILES[case.file]}"}
    assert [str(p) for p in plan.errors if p.path not in allowed] == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_python_api_runs_what_the_plan_runs(here: Path, case: Case) -> None:
    """One set of rules for both doors (issues 16, 17): `Benchmark.run_all()` evaluates exactly
    the plan's jobs on a malformed dataset (a bad entity costs only what depends on it, never a
    COMPILE_ERROR or RUNTIME_ERROR trace of its own), and reports the same errors as the plan."""
    from flashinfer_bench import Benchmark, BenchmarkConfig

    ds = make_case(Path("ds"), case)
    plan = build_plan(ds, "cpu")
    ts = TraceSet.from_path(ds)
    if ts is None:  # nothing loadable: nothing to compare
        return
    bench = Benchmark(ts, BenchmarkConfig(device="cpu", worker_dir=str(here / "w"), cache_dir=str(here / "c")))
    assert bench.pairs() == sorted((j.definition, j.solution, j.uuid) for j in plan.jobs)
    planned = {(p.path, p.line, p.field) for p in plan.errors}
    for p in bench.problems:  # each error the API reports is one the plan reports, located alike
        assert (p.path, p.line, p.field) in planned, (str(p), [str(x) for x in plan.errors])


# ------------------------------------------------------------------ traces
def test_a_non_utf8_traces_line_costs_only_that_line(here: Path) -> None:
    ds = make_case(Path("ds"), next(c for c in CASES if c.id == "traces_line_not_utf8"))
    ts = TraceSet.from_path(ds)
    assert sorted(t.workload.uuid for t in ts.all_traces()) == ["w1", "w8"]
    assert [str(p) for p in ts.errors] == [
        f"ds/{TRACES}:2: cannot read this line: not UTF-8 text (byte 0xff at byte 17)"
    ]


def test_aggregation_keeps_a_non_utf8_line_and_the_other_traces(here: Path) -> None:
    """merge_traces (the run's aggregate job) used to fail on this and every later run."""
    from flashinfer_bench.data import Trace
    from flashinfer_bench.pipeline.jobs import merge_traces

    ds = make_case(Path("ds"), next(c for c in CASES if c.id == "traces_line_not_utf8"))
    target = ds / TRACES
    bad = target.read_bytes().split(b"\n")[1]
    new = Trace.model_validate(trace_line("w1"))  # replaces line 1 (same definition, solution, workload, hardware)
    assert merge_traces(target, [new]) == 1
    lines = target.read_bytes().split(b"\n")
    assert bad in lines
    assert sorted(json.loads(x)["workload"]["uuid"] for x in lines if x and x != bad) == ["w1", "w8"]
    assert merge_traces(target, [new]) == 1  # and again: the next run is not blocked either
    assert target.read_bytes().split(b"\n").count(bad) == 1


def test_fields_our_own_run_writes_are_not_warned_about(here: Path) -> None:
    make_base(Path("ds"))
    env = {"memory_bytes": 1, "compute_capability": "9.0", "gpu_uuid": "GPU-x", "sm_count": 1, "l2_bytes": 1,
           "clocks_start": {}, "clocks_end": {}, "start_time": "t", "end_time": "t", "peaks_error": "x",
           "clocks_at_worker_start": {}}
    p = Path("ds") / TRACES
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps(trace_line("w1", **env)) + "\n" + json.dumps(trace_line("w8")) + "\n")
    assert validate_dataset(Path("ds")) == []


# ------------------------------------------------------------------ bounded expressions
@pytest.mark.parametrize("expr", [
    "9**9**9**9", "2**2**2**2**2**2", "batch_size ** 10**9", "(10**80) ** 4", "[0] * 2**40", "(1,) * 2**62",
    "-" * 3000 + "1", "not " * 1000 + "1", "+".join(["batch_size"] * 1500), "1" * 5000, "a" * 5000,
    "min(x)", "batch_size + [1]", "-[1]", "[1] < 2",
])
def test_every_expression_ends_quickly_with_a_value_or_an_exprerror(expr: str) -> None:
    import numpy as np

    from flashinfer_bench.data.expr import ExprError, evaluate

    t0 = time.monotonic()
    try:
        evaluate(expr, {"batch_size": 3, "x": np.arange(10)})
    except ExprError:
        pass
    assert time.monotonic() - t0 < 2.5
