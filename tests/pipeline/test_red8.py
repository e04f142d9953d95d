"""Red team 8 (a helper's, CPU): hostile solution JSON against the pipeline, its outputs, the
report and apply(). Each test asserts what the defence SHOULD give: a failing test is a working
attack.

Closed in session 25 (data/fields.py `name_problem`, the dataset's error charged to the file):
periodic names, names over 223 bytes, C1 and bidirectional controls.

- periodic_name (class: pipeline crash, d): a solution name ending in a substring repeated 20
  times ("fast_rmsnorm" + 20 underscores, "v" + 20 zeros) passes the name check and the plan, and
  Snakemake's DAG build raises PeriodicWildcardError on the benchmark rule's `solution` wildcard:
  the whole run (every definition, every solution) ends in 0.6 s with nothing measured,
  aggregated or reported.
- long_name (class: pipeline crash, d): a name of 251-255 bytes passes the name check (<= 255) but
  `builds/<name>.json` is over NAME_MAX: the DAG build raises OSError ENAMETOOLONG, same effect.
- squat_honest_name: a second file claiming an honest solution's name removes the honest solution
  from the run, the report and apply() (by design, "neither is used"): harm (b) for the price of
  one JSON file. Not closed: xfail (strict).
- inherit_orphan_traces: traces without `solution_hash` (every upstream 0.1.2 trace) of a
  solution that is no longer in the dataset are never stale; a new solution that takes that name
  is ranked best / dispatched by apply() on the old numbers. Not closed: xfail (strict).
- name_controls: C1 controls and bidi overrides pass the name check (logs escape C1), and reach
  the progress lines and the plain summary unescaped.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from flashinfer_bench.data import Solution, Trace, TraceSet
from flashinfer_bench.pipeline.plan import build_plan

from .harness import TORCH_DPS, TORCH_VALUE, run_pipeline, solution, write_dataset

SDIR = "solutions/tests/rmsnorm/rms_h256"


def _add_solution(ds: Path, fname: str, sol: dict, sub: str = SDIR) -> Path:
    d = ds / sub
    d.mkdir(parents=True, exist_ok=True)
    p = d / fname
    p.write_text(json.dumps(sol, indent=2))
    return p


def _honest_traces(ds: Path) -> list:
    f = ds / "traces/rmsnorm/rms_h256.jsonl"
    if not f.exists():
        return []
    return [json.loads(x) for x in f.read_text().splitlines() if x.strip()]


# --------------------------------------------------------------------------- (d) names Snakemake refuses
def _long_name(n: int) -> str:
    """n bytes, no periodic suffix (Snakemake's periodic-wildcard check stays out of the way)."""
    import hashlib

    out, h = "", b"red8"
    while len(out) < n:
        h = hashlib.sha256(h).digest()
        out += h.hex()
    return out[:n]


def _others_survive(tmp_path: Path, ds: Path, bad: str, fname: str) -> None:
    """The bad name is the dataset's error, charged to its file; every other solution runs."""
    plan = build_plan(ds, device="cpu")
    assert bad not in plan.solutions, "planned a name whose files the run cannot make"
    assert any(fname in str(e) for e in plan.errors), plan.errors
    r = run_pipeline(tmp_path, extra=["--keep-going"])  # as `flashinfer-bench run` runs it
    got = {(t["solution"], t["workload"]["uuid"]) for t in _honest_traces(ds)}
    tail = "\n".join(x[:300] for x in r.output.splitlines()[-25:])
    # the honest solutions' traces reach the dataset, and the report is written
    assert {("torch_value", "rms_h256_b4"), ("torch_dps", "rms_h256_b4")} <= got, f"rc={r.rc}\n{tail}"
    assert (tmp_path / "results/report/summary.txt").exists(), f"rc={r.rc}\n{tail}"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fast_rmsnorm" + "_" * 20, "rms" + "ab" * 20, "v" + "0" * 20])
def test_a_periodic_solution_name_does_not_stop_the_run(tmp_path: Path, name: str) -> None:
    """Snakemake raises PeriodicWildcardError while building the DAG for any wildcard value that
    ends in a substring repeated 20 times: one such solution name ends the whole run."""
    ds = write_dataset(tmp_path, batches=(4,))
    _add_solution(ds, "periodic.json", solution(name, TORCH_VALUE, False), sub="solutions/zzz_attacker")
    _others_survive(tmp_path, ds, name, "periodic.json")


@pytest.mark.slow
@pytest.mark.parametrize("n", [251, 255])
def test_a_long_solution_name_does_not_stop_the_others_results(tmp_path: Path, n: int) -> None:
    ds = write_dataset(tmp_path, batches=(4,))
    long_name = _long_name(n)
    _add_solution(ds, "long.json", solution(long_name, TORCH_VALUE, False), sub="solutions/zzz_attacker")
    _others_survive(tmp_path, ds, long_name, "long.json")


def test_the_plan_refuses_names_whose_files_cannot_exist(tmp_path: Path) -> None:
    """Cheap form of the above: the plan should report the name (as it does 256 bytes) instead of
    planning jobs whose output files are over NAME_MAX."""
    ds = write_dataset(tmp_path, batches=(4,))
    long_name = "y" * 252
    _add_solution(ds, "long.json", solution(long_name, TORCH_VALUE, False))
    plan = build_plan(ds, device="cpu")
    outputs = [f"builds/{long_name}.json", f"validated/solutions/{long_name}.txt", f"compile/{long_name}.log"]
    too_long = [o for o in outputs if len(Path(o).name.encode()) > 255]
    planned = long_name in plan.solutions
    assert not (planned and too_long), (
        f"planned {long_name[:8]}...({len(long_name)} bytes) whose files {[o[:20] + '...' for o in too_long]} exceed NAME_MAX")


# --------------------------------------------------------------------------- (b) squatting
@pytest.mark.xfail(strict=True, reason="not closed (session 25): a name claimed by two files is neither's "
                   "(data/names.py); ownership of a name is not modelled (docs/security.md)")
def test_a_second_file_cannot_remove_an_honest_solution_from_the_run(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path, batches=(4,))
    # the attacker's file, anywhere under solutions/, claiming the honest name
    _add_solution(ds, "copy.json", solution("torch_value", "def run(x, weight, eps):\n    return x\n", False),
                  sub="solutions/zzz_attacker")
    plan = build_plan(ds, device="cpu")
    ts = TraceSet.from_path(ds)
    assert "torch_value" in plan.solutions, "the honest solution was dropped from the run"
    assert ts.get_solution("torch_value") is not None, "the honest solution was dropped from report/apply"


# --------------------------------------------------------------------------- (a) orphan traces
def _legacy_trace(sol: str, lat: float, uuid: str = "rms_h256_b4") -> dict:
    return {
        "definition": "rms_h256",
        "workload": {"uuid": uuid, "axes": {"batch_size": 4}, "inputs": {}},
        "solution": sol,
        "evaluation": {"status": "PASSED", "environment": {"hardware": "CPU x", "libs": {}},
                       "timestamp": "2025-01-01T00:00:00Z", "log": "",
                       "correctness": {"max_relative_error": 0.0, "max_absolute_error": 0.0},
                       "performance": {"latency_ms": lat, "reference_latency_ms": 1.0, "speedup_factor": 1.0 / lat}},
    }


@pytest.mark.xfail(strict=True, reason="not closed (session 25): a trace without solution_hash (every upstream "
                   "0.1.2 trace) is bound to its solution by name only (docs/security.md)")
def test_a_new_solution_does_not_inherit_an_orphaned_solutions_legacy_traces(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path, batches=(4,))
    tf = ds / "traces/rmsnorm/rms_h256.jsonl"
    tf.parent.mkdir(parents=True)
    # upstream-format traces (no solution_hash): an honest solution, and one long since removed
    tf.write_text(json.dumps(_legacy_trace("torch_value", 0.010)) + "\n"
                  + json.dumps(_legacy_trace("retired_fast_kernel", 0.001)) + "\n")
    # the attacker's new solution takes the removed one's name (its code: returns garbage)
    _add_solution(ds, "fast.json", solution("retired_fast_kernel", "def run(x, weight, eps):\n    return x\n", False),
                  sub="solutions/zzz_attacker")
    ts = TraceSet.from_path(ds)
    assert ts.get_solution("retired_fast_kernel") is not None
    from flashinfer_bench.apply.config import ApplyConfig
    from flashinfer_bench.apply.table import usable_traces

    best = ts.best_solution("rms_h256")
    served = {t.solution for t in usable_traces(ts, ts.definitions["rms_h256"], "CPU x",
                                                ApplyConfig(require_speedup=False), set())}
    assert (best, "retired_fast_kernel" in served) == (best if best != "retired_fast_kernel" else None, False), (
        f"best_solution={best!r}, apply() may dispatch to {sorted(served)}: the attacker's never-measured "
        "code takes another solution's numbers")


# --------------------------------------------------------------------------- (2) names on screen
@pytest.mark.parametrize("ch", ["\u009b", "\u202e", "\u2066"])
def test_a_name_cannot_carry_terminal_or_bidi_controls(ch: str) -> None:
    from pydantic import ValidationError

    name = f"evil{ch}dellaf :RORRE_EMITNUR"
    with pytest.raises(ValidationError):
        Solution.model_validate(solution(name, TORCH_VALUE, False))
