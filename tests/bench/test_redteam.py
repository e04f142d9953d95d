"""Hostile solutions (tests/bench/redteam/*.py) through the real worker: none may end as a fast PASSED.

Each case runs on the CPU here; the GPU-only ones (side stream, all GPU memory, illegal address)
and a GPU pass over every case are in test_gpu.py.
"""
from __future__ import annotations

from typing import Dict, Set

import pytest

from flashinfer_bench.bench.client import evaluate_via_worker, ping_worker
from flashinfer_bench.data import Trace

from .conftest import GOOD_VR, REDTEAM, make_solution, rms_workload

# name -> (destination passing style, allowed statuses, flag that must be set)
CASES: Dict[str, tuple] = {
    "zeros": (False, {"INCORRECT_NUMERICAL"}, None),
    "identity": (False, {"INCORRECT_NUMERICAL"}, None),
    "constant": (False, {"INCORRECT_NUMERICAL"}, None),
    "cache_by_pointer": (False, {"INCORRECT_NUMERICAL"}, None),
    "cache_by_fingerprint": (False, {"INCORRECT_NUMERICAL"}, None),
    "lazy_subclass": (False, {"RUNTIME_ERROR"}, None),
    "lazy_thread": (False, {"INCORRECT_NUMERICAL"}, None),
    "mutate_inputs": (False, {"INCORRECT_NUMERICAL"}, "inputs_mutated"),
    "half_output": (True, {"INCORRECT_NUMERICAL"}, None),
    "raises": (False, {"RUNTIME_ERROR"}, None),
    "sys_exit": (False, {"RUNTIME_ERROR"}, None),
    "exits": (False, {"RUNTIME_ERROR"}, None),
    "segfault": (False, {"RUNTIME_ERROR"}, None),
    "aborts": (False, {"RUNTIME_ERROR"}, None),
}
CRASHES = {"exits", "segfault", "aborts"}


def _run(name: str, rms_def, build, config, dps: bool = False, batch: int = 16) -> Trace:
    src = (REDTEAM / f"{name}.py").read_text()
    sol = make_solution(f"redteam_{name}", src, rms_def, dps=dps)
    return evaluate_via_worker(rms_def, sol, rms_workload(batch), build(sol, rms_def), config)


def _flags(t: Trace) -> Set[str]:
    ev = t.evaluation
    return set((ev.correctness.extra or {}).get("flags", [])) if ev and ev.correctness else set()


def _assert_good_next(rms_def, build, config) -> None:
    sol = make_solution("good_after_redteam", GOOD_VR, rms_def)
    t = evaluate_via_worker(rms_def, sol, rms_workload(8), build(sol, rms_def), config)
    assert t.evaluation.status.value == "PASSED", t.evaluation.log


# what the log of a case must contain
LOG_HAS = {
    "raises": ["ValueError: this kernel is broken on purpose"],
    "exits": ["about to leave", "exit code 0"],
    "segfault": ["SIGSEGV", "reading address 16"],
    "aborts": ["SIGABRT"],
    "sys_exit": ["SystemExit"],
    "lazy_subclass": ["subclass"],
    "half_output": ["non-finite"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_solution_is_not_passed(name: str, rms_def, build, cpu_config) -> None:
    dps, statuses, flag = CASES[name]
    before = ping_worker("cpu", cpu_config, spawn=True) if name in CRASHES else None
    t = _run(name, rms_def, build, cpu_config, dps=dps)
    ev = t.evaluation
    assert ev.status.value in statuses, f"{name}: {ev.status.value}\n{ev.log}"
    assert ev.performance is None
    assert ev.log.strip(), "a failure must say why"
    for text in LOG_HAS.get(name, []):
        assert text in ev.log, (name, ev.log)
    if flag:
        assert flag in _flags(t), (name, _flags(t))
    if name in CRASHES:
        # the crash cost one runner: the supervisor lives on and the next request succeeds
        assert "runner process died" in ev.log
        _assert_good_next(rms_def, build, cpu_config)
        after = ping_worker("cpu", cpu_config)
        assert before is not None and after is not None
        assert before["pid"] == after["pid"], "the supervisor must survive a crashing solution"
        assert before["runner"] != after["runner"], "the crashed runner must have been replaced"


def test_sleeping_forever_times_out(rms_def, build, cpu_config) -> None:
    cfg = cpu_config.model_copy(update={"timeout_s": 4.0})
    t = _run("sleeps_forever", rms_def, build, cfg)
    assert t.evaluation.status.value == "TIMEOUT", t.evaluation.log
    assert "4 s timeout" in t.evaluation.log
    _assert_good_next(rms_def, build, cpu_config)


def test_patched_timers_are_flagged_and_not_believed(rms_def, build, cpu_config) -> None:
    # the harness timed with the clocks it captured before the solution was imported, but a
    # solution that replaces timing functions fails (issue 9: sandbox.guard), naming what it replaced
    t = _run("timer_patch", rms_def, build, cpu_config)
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log
    assert "timer_patched" in ev.log and "time.perf_counter" in ev.log
    assert ev.performance is None
    _assert_good_next(rms_def, build, cpu_config)


def test_calling_the_reference_is_no_faster_than_it(rms_def, build, cpu_config) -> None:
    cfg = cpu_config.model_copy(update={"max_time_s": 0.1})
    t = _run("calls_reference", rms_def, build, cfg, batch=256)
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log
    assert ev.performance.speedup_factor < 1.5, ev.performance
    if ev.performance.speedup_factor <= 1.05:
        assert "no_faster_than_reference" in _flags(t)


def test_solution_output_is_kept_but_capped(rms_def, build, cpu_config) -> None:
    t = _run("chatty", rms_def, build, cpu_config)
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log
    assert "FIRST LINE" in ev.log and "LAST LINE" in ev.log and "bytes of output cut" in ev.log
    assert len(ev.log) < cpu_config.log_limit_bytes + 1000
