"""Red team, part three: code inside the runner that rewrites the harness's own state (frames,
the heap, closures, instance attributes, dunders, shadowed C methods, the sealer, a shared module,
the clock's C method table, the statistics, the reference's time) or predicts its inputs (issue 15).

Each of these produced a PASSED trace with a fake 5x-150x speedup before the supervisor's witness
(`bench/sandbox/witness.py`): the numbers came from memory the solution could write. Now every
trace a user would rank must be either not PASSED or without a gain, the honest solution
evaluated after it keeps its status and latency, and nothing outside scratch changes.

The attacks' honest computation is made to cost ~3 ms a call (`COST` repeats), small data: the
witness resolves that from outside even on this shared 2-core VM, where its resolution is about
2x + 0.25 ms per call and worse for data-heavy calls (see docs/security.md).
`FIB_TEST_SHOW_ATTACKS=1` also runs every attack against a worker with the witness off and
checks that it did work there (the "before" column of benchmarks/measured/2026-11-23-attacks.md).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Iterator, Optional

import pytest

from flashinfer_bench.bench.client import evaluate_via_worker
from flashinfer_bench.data import Trace

from tests.bench.conftest import rms_workload
from .conftest import Lab, flags, running_lab

WL = rms_workload(16, uuid="rms_witnessed")
SMALL = rms_workload(8, uuid="rms_small")
COST = 100  # repeats of the honest computation in the attacks: a call of ~3 ms
SHOW = os.environ.get("FIB_TEST_SHOW_ATTACKS") == "1"

# attack -> what stops it now (a word the trace's log or flags must hold)
STOPPED_BY: Dict[str, str] = {
    "frame_samples": "timing_disputed",
    "gc_sampler_swap": "timing_disputed",
    "instance_shadow_run": "timing_disputed",
    "refresher_work": "timing_disputed",
    "sealer_wrap": "timing_disputed",
    "json_rewrite": "timing_disputed",
    "ctypes_perf_counter": "timing_disputed",
    "rewrite_stats": "timing_disputed",
    "rewrite_stats_modest": "timing_disputed",
    "rewrite_stats_cheap": "timing_disputed",  # one ~40 us RMSNorm a call (its COST is ignored) forged 20x
    "late_outputs": "timing_disputed",  # on a CPU: its statistics /3.5 (the graph round it rewrites is the GPU's)
    "patch_and_restore": "timing_disputed",
    "regenerate_timed_inputs": "timing_disputed",
    "spin_after_reply": "timing_disputed",  # its runner stays on the CPU after each reply (the clock's lag)
    "dunder_invert": "timer_patched",
    "shadow_tensor_method": "timer_patched",
    "inflate_reference": "reference_tampered",
    "scratch_fill_rewrite_stats": "witness_failed",
    # wrong outputs (witness_wrong), or its own run() cannot follow a stepped CPU round
    # (witness_failed); since session 23 the runner calls the run() it took before any solution,
    # so where the guard does not watch the witness the real one times the forgery (timing_disputed)
    "witness_bad_outputs": "witness_|timing_disputed",
    "wrong_when_witnessed": "witness_wrong",
    "skip_witnessed_calls": "witness_wrong",  # zeros in 2 of 3 witness calls: 8 of a cheap round's 64 checked
    "tamper_witness_inputs": "witness_failed",  # on a CPU the file is its own copy: truncated under its mapping, its calls die
    # session 19: wraps the runner's witness._save_all to describe a size as Infinity (the check
    # raised past its handler: `unwitnessed`, PASSED at 125x); now unreadable outputs
    "witness_check_overflow": "witness_wrong",
    # session 19: a trace function rebinding the sampler's end time (no object replaced)
    "settrace_sampler": "timer_patched",
    # session 19: CPU time burnt after one round's reply widened every round's bound (the
    # parallelism was the largest of the rounds; now the least)
    "parallelism_inflate": "timing_disputed",
    # session 20 (a helper's round on the new surfaces): a 5x forgery of a ~3 ms call, meant for
    # the load calibration's widened bound; the same with a thread that churns 768 MiB after each
    # round to slow the reference while it is calibrated; a thread racing the supervisor to make
    # the round's outputs file (or swap it for a link to the inputs): see its own test
    "calibration_forge": "timing_disputed",
    "calibration_leftover_thread": "timing_disputed",
    # session 21 (a helper's round on the chained calls): rows of the harness's results emptied
    # (PASSED at 22x: a row describing no output was checked on none), outputs as a tensor subclass
    # whose __torch_function__ ran inside the harness's chain and save (22x; and one blinding the
    # chain), the runner's own chain switched off from its frame, the chain's recurrence solved
    # by batched sweeps
    "chain_empty_rows": "witness_wrong",
    "chain_subclass_empty": "witness_failed",
    "chain_subclass_blind": "witness_failed",
    "chain_unchained_runner": "witness_wrong",
    "chain_fixed_point": "timing_disputed",
}

# forged by 3.5x: on this 2-core machine loaded by the suite's other worker the claim's wall time
# can double while the witness's CPU time does not, so the forgery can sit inside the CPU
# witness's 2x slack (docs/security.md, its resolution); a PASSED must still gain nothing
AT_CPU_RESOLUTION = {"rewrite_stats_modest", "late_outputs"}


def _good(lab: Lab, wl=WL) -> Trace:
    return evaluate_via_worker(lab.definition, lab.good, wl, lab.good_build, lab.config, dataset_root=lab.dataset)


@pytest.fixture(scope="module")
def baseline(lab: Lab) -> Trace:
    t = _good(lab)
    assert t.evaluation.status.value == "PASSED", t.evaluation.log
    return t


def _speedup(t: Trace) -> float:
    p = t.evaluation.performance
    return p.speedup_factor if p is not None else 0.0


def passed_with_gain(t: Trace, base: Trace) -> bool:
    """PASSED and faster than an honest solution of the same work by more than noise."""
    return t.evaluation.status.value == "PASSED" and _speedup(t) > max(1.5, 3.0 * _speedup(base))


@pytest.fixture(scope="module")
def small_baseline(lab: Lab) -> Trace:
    t = _good(lab, SMALL)
    assert t.evaluation.status.value == "PASSED", t.evaluation.log
    return t


def _assert_honest_unaffected(lab: Lab, base: Trace) -> None:
    """The honest solution evaluated after the attack: same status, latency within noise."""
    after = _good(lab, SMALL)
    ev = after.evaluation
    assert ev.status.value == "PASSED", ev.log
    b, a = base.evaluation.performance.latency_ms, ev.performance.latency_ms
    assert a < 3 * b + 0.3, (b, a)


# attacks that replace a function of the witness's runner side or a function's code object: the
# guard stops them first (`timer_patched`); `test_the_witness_beneath_the_guard_stops_them_too`
# runs them without that layer (FIB_SANDBOX_GUARD_WITNESS=off) to show the witness's own verdict
BENEATH_THE_GUARD = {"late_outputs", "spin_after_reply", "witness_bad_outputs", "witness_check_overflow"}
# session 19 (a helper): a leaner handler of the witness's calls in place of the harness's collects
# the harness's share of a round (the null, subtracted) as credit: PASSED at 23-25x beneath the
# guard; only the guard stops these (docs/security.md, what does not hold)
GUARD_ONLY = {"lean_share_witness": "timer_patched", "batched_witness_handler": "timer_patched"}


@pytest.mark.parametrize("name", sorted(STOPPED_BY) + sorted(GUARD_ONLY))
def test_rewriting_the_harness_from_inside_gains_nothing(
    name: str, lab: Lab, baseline: Trace, small_baseline: Trace, unchanged,
) -> None:
    why = "timer_patched" if name in BENEATH_THE_GUARD else GUARD_ONLY.get(name) or STOPPED_BY[name]
    _assert_stopped(lab, name, why, baseline, small_baseline)
    unchanged()


@pytest.fixture(scope="module")
def bare_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A lab whose runners' guard leaves the witness's runner side and code objects unwatched."""
    with running_lab(tmp_path_factory.mktemp("bare"), env={"FIB_SANDBOX_GUARD_WITNESS": "off"}) as bare:
        yield bare


@pytest.mark.parametrize("name", sorted(BENEATH_THE_GUARD))
def test_the_witness_beneath_the_guard_stops_them_too(name: str, bare_lab: Lab) -> None:
    baseline, small = _good(bare_lab), _good(bare_lab, SMALL)
    _assert_stopped(bare_lab, name, STOPPED_BY[name], baseline, small)


def _assert_stopped(lab: Lab, name: str, why: str, baseline: Trace, small_baseline: Trace) -> None:
    t = lab.run(name, workload=WL, COST=COST)
    ev = t.evaluation
    assert not passed_with_gain(t, baseline), (name, ev.status, _speedup(t), _speedup(baseline), ev.log[-1500:],
                                               ((ev.correctness.extra or {}) if ev.correctness else {}).get("witness"))
    if name in AT_CPU_RESOLUTION and ev.status.value == "PASSED" and why not in flags(t):
        _assert_honest_unaffected(lab, small_baseline)  # within the resolution, without a gain (above)
        return
    whys = why.split("|")  # any of them
    if set(whys) & {"timing_disputed", "timer_patched", "witness_failed", "witness_wrong", "witness_"}:  # its honest call costs ~3 ms: any PASSED is a fake
        assert ev.status.value != "PASSED", (name, ev.performance, ev.log[-1500:])
    assert any(w in ev.log or w in flags(t) for w in whys), (name, ev.status, sorted(flags(t)), ev.log[-1500:])
    if why == "reference_tampered":  # the supervisor's own reference numbers, not the runner's echo
        assert ev.status.value == "PASSED"
        assert ev.performance.reference_latency_ms < 10 * baseline.evaluation.performance.reference_latency_ms
    _assert_honest_unaffected(lab, small_baseline)


def test_a_leftover_thread_beside_a_cheap_forgery_is_disputed(lab: Lab) -> None:
    """`calibration_leftover_thread` with one RMSNorm a call (session 22): a 5x forgery of a cheap
    call, whose rounds of 128 calls are each followed by the reference on their inputs
    (`_Witness._reference_after`) while its thread churns 768 MiB, hoping the reference reads
    slow and the bound widens. Disputed (110-122 us a call witnessed: the churn is in its own
    rounds), and the honest solution after it is unaffected."""
    small = _good(lab, SMALL)
    t = lab.run("calibration_leftover_thread", workload=WL, COST=1)
    ev = t.evaluation
    assert ev.status.value != "PASSED" and "timing_disputed" in ev.log, (ev.status, ev.log[-1500:])
    _assert_honest_unaffected(lab, small)


def test_no_timed_input_is_recognised_as_a_window_of_the_runner_s_pools(lab: Lab) -> None:
    """`pool_window_lookup` (session 23) found the refresh pools on the heap, recognised each timed
    input as a window of one and answered it from norms precomputed over the whole pool: PASSED at
    a forgery of 1.41-1.47x on the CPU, within the witness's slack. Each timed input is now two
    windows combined: it recognises none, computes honestly, and passes without a gain."""
    base = _good(lab)
    t = lab.run("pool_window_lookup", workload=WL, COST=COST)
    ev = t.evaluation
    assert "recognised as a pool window" not in ev.log, ev.log[-1500:]
    assert ev.status.value == "PASSED", ev.log[-1500:]
    assert not passed_with_gain(t, base)


def test_a_content_cache_across_evaluations_gains_nothing(lab: Lab) -> None:
    """Answers remembered by input fingerprint for as long as the runner lives, a miss costing
    2 ms: the second evaluation of the same workload in the same runner times new inputs."""
    wl = rms_workload(64, uuid="rms_cache")
    first = lab.run("content_cache", workload=wl)
    second = lab.run("content_cache", workload=wl)
    for t in (first, second):
        assert t.evaluation.status.value == "PASSED", t.evaluation.log
        assert t.evaluation.performance.latency_ms > 1.5, t.evaluation.performance  # every timed call missed
    assert second.evaluation.performance.latency_ms > 0.5 * first.evaluation.performance.latency_ms


@pytest.fixture(scope="module")
def lab_without_witness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with running_lab(tmp_path_factory.mktemp("no-witness"), env={"FIB_WITNESS": "off"}) as lab:
        yield lab


@pytest.mark.skipif(not SHOW, reason="FIB_TEST_SHOW_ATTACKS=1 shows the attacks working without the witness")
@pytest.mark.parametrize("name", sorted(STOPPED_BY))
def test_the_attack_works_without_the_witness(name: str, lab_without_witness: Lab) -> None:
    lab = lab_without_witness
    base = _good(lab)
    t = lab.run(name, workload=WL, COST=COST)
    ev = t.evaluation
    print(f"WITHOUT WITNESS {name}: {ev.status.value} speedup {_speedup(t):.3g} (honest {_speedup(base):.3g}) "
          f"flags {sorted(flags(t))}")
    if name in ("dunder_invert", "shadow_tensor_method"):
        return  # the guard (in the runner) stops these too
    if name == "inflate_reference":
        assert ev.status.value == "PASSED" and "reference_tampered" in flags(t)
        return
    # PASSED and far faster than its own honest computation (~3 ms a call)
    assert ev.status.value == "PASSED" and ev.performance.latency_ms < 1.0, (name, ev.status, ev.performance, ev.log[-1500:])


def test_understated_error_figures_are_the_witness_s(lab: Lab) -> None:
    """A solution 0.4% off (inside the tolerance) that writes its recorded error figures down to 0
    from its timed calls: PASSED, with the figures the witness measured in the reference runner."""
    t = lab.run("forge_error_numbers", workload=WL, COST=1)
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log
    c = ev.correctness
    assert c.max_relative_error > 0.002 and c.max_absolute_error > 0.0, c
    assert c.extra["runner_correctness"] == {"max_abs": 0.0, "max_rel": 0.0}, c.extra  # what it forged
    assert c.extra["witness"]["errors"]["max_rel"] > 0.002


@pytest.mark.skipif(not SHOW, reason="FIB_TEST_SHOW_ATTACKS=1 shows the attacks working without the witness")
def test_understated_error_figures_without_the_witness(lab_without_witness: Lab) -> None:
    t = lab_without_witness.run("forge_error_numbers", workload=WL, COST=1)
    ev = t.evaluation
    print(f"WITHOUT WITNESS forge_error_numbers: {ev.status.value} max_abs {ev.correctness.max_absolute_error}")
    assert ev.status.value == "PASSED" and ev.correctness.max_absolute_error == 0.0


@pytest.fixture(scope="module")
def stepped_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A lab whose CPU witness hands a round's inputs over call by call (FIB_WITNESS_STEPPED=on)."""
    with running_lab(tmp_path_factory.mktemp("stepped"), env={"FIB_WITNESS_STEPPED": "on"}) as stepped:
        yield stepped


@pytest.mark.parametrize("attack", ["batch_in_call", "batch_in_costly_call"])
def test_chained_calls_defeat_batching_the_witnessed_calls(lab: Lab, baseline: Trace, small_baseline: Trace,
                                                           attack: str) -> None:
    """`batch_in_call` reads a round's inputs from the harness's frame in its first witnessed call
    and computes the round in one batch: witnessed at its batch throughput, PASSED at 22x in about
    1 run of 5; `batch_in_costly_call` does it to a round of costly calls (COST RMSNorms each, its
    claim forged 8x) and PASSED 3 of 3 at 8.8-9.1x (session 21). A round's calls are chained now
    (each call's input moved by the previous call's outputs, `witness._chained`): the inputs it
    batched are not the ones its calls get, so it computes each call as it comes and its forged
    claim is disputed; the honest solution passes."""
    _assert_stopped(lab, attack, "timing_disputed", baseline, small_baseline)


@pytest.mark.parametrize("attack", ["batch_in_call", "batch_in_costly_call"])
def test_a_stepped_round_defeats_batching_the_witnessed_calls(stepped_lab: Lab, attack: str) -> None:
    """Stepped (the inputs handed over call by call, FIB_WITNESS_STEPPED=on) and chained, the
    batching attacks gain nothing either: the later calls' inputs are zeros when they batch them
    (witness_wrong), or their batch is not what their calls get (timing_disputed)."""
    small = _good(stepped_lab, SMALL)
    t = stepped_lab.run(attack, workload=WL, COST=COST)
    assert t.evaluation.status.value != "PASSED", (attack, t.evaluation.log[-1500:])
    assert "witness_wrong" in t.evaluation.log or "timing_disputed" in t.evaluation.log, t.evaluation.log[-1500:]
    _assert_honest_unaffected(stepped_lab, small)


def test_a_stepped_round_checks_the_outputs_that_existed_when_each_call_returned(stepped_lab: Lab) -> None:
    """`late_batch_fixup` answers each stepped call with a buffer of zeros, then at the last call
    (every input there) computes the round in one batch and fills the buffers and the outputs file
    in place: the file and its description end right. The supervisor copied each call's bytes out
    as it returned and checks those: witness_wrong; the honest solution passes."""
    baseline, small = _good(stepped_lab), _good(stepped_lab, SMALL)
    _assert_stopped(stepped_lab, "late_batch_fixup", "witness_wrong", baseline, small)


def test_a_refused_stepped_hand_over_fails_the_solution_and_closes_nothing_twice(stepped_lab: Lab) -> None:
    """`stepped_inputs_precreate` makes `inputs.bin` in each new witness folder before the
    supervisor copies the round's inputs there: the hand-over is refused (its fault:
    witness_failed). Before, the refused hand-over and the round both closed the outputs
    file's descriptor (EBADF, or another thread's file in between)."""
    baseline, small = _good(stepped_lab), _good(stepped_lab, SMALL)
    t = stepped_lab.run("stepped_inputs_precreate", workload=WL, COST=COST)
    ev = t.evaluation
    assert not passed_with_gain(t, baseline) and ev.status.value == "RUNTIME_ERROR", (ev.status, ev.log[-1500:])
    assert "witness_failed" in ev.log and "Bad file descriptor" not in ev.log, ev.log[-1500:]
    _assert_honest_unaffected(stepped_lab, small)


def test_a_stepped_round_ends_within_the_job_s_timeout(stepped_lab: Lab) -> None:
    """`stepped_slow_steps` sleeps 0.2 s in each stepped witnessed call (no CPU time, correct
    outputs): each step had a timeout of its own, so a 128-call round could hold the worker for
    128 x the job's timeout (231 s of a 60 s timeout in the helper's run). With a 4 s timeout the
    round now ends at 4 s: witness_failed."""
    import time

    cfg = stepped_lab.config.model_copy(update={"timeout_s": 4})
    t0 = time.monotonic()
    t = stepped_lab.run("stepped_slow_steps", workload=WL, config=cfg, SLEEP=0.2)
    took = time.monotonic() - t0
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR" and "witness_failed" in ev.log, (ev.status, ev.log[-1500:])
    assert took < 20.0, took  # one round's 4 s (and the evaluation's own), not 128 x 0.2 s


def test_racing_the_supervisor_for_the_outputs_file_costs_only_the_racer(lab: Lab) -> None:
    """`outputs_precreate` races the supervisor to make each round's outputs file (or swaps it for
    a link to the inputs). Where it wins the race its round fails (witness_failed, or
    witness_wrong); where it loses it is an honest solution: never a gain, and the next honest
    solution is unaffected."""
    baseline, small = _good(lab), _good(lab, SMALL)
    t = lab.run("outputs_precreate", workload=WL, COST=COST)
    ev = t.evaluation
    assert not passed_with_gain(t, baseline), (ev.status, _speedup(t), ev.log[-1500:])
    if ev.status.value != "PASSED":
        assert "witness_failed" in ev.log or "witness_wrong" in ev.log, ev.log[-1500:]
    _assert_honest_unaffected(lab, small)
