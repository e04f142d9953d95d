"""The witness's first round is made while the solution is evaluated (`witness.prestage`): the
reference runner makes its inputs and runs the reference on them during the evaluation, so the
witness itself only hands them over, times the calls and compares. What a user relies on: the
verdicts are the same (every attack of tests/security still meets it), an evaluation that does not
pass leaves nothing in the reference runner's channel for the next job, and the inputs stay out of
the solution's sight until its clock starts (`peek_witness_inputs`, in tests/security/test_attacks.py).
"""
from __future__ import annotations

from flashinfer_bench.bench.client import evaluate_via_worker
from flashinfer_bench.data import Trace

from tests.bench.conftest import make_solution, rms_workload
from flashinfer_bench.bench.loader import _shim_build

from tests.security.conftest import Lab

RAISES = """def run(x, weight, eps):
    raise RuntimeError("this solution always fails")
"""


def _good(lab: Lab, uuid: str) -> Trace:
    return evaluate_via_worker(lab.definition, lab.good, rms_workload(32, uuid=uuid), lab.good_build, lab.config,
                               dataset_root=lab.dataset)


def test_the_first_round_is_made_during_the_evaluation(lab: Lab) -> None:
    t = _good(lab, "prestage_first")
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log
    w = ev.extra["witness"]
    assert w["prestaged"] is True, w
    assert w["bad_calls"] == 0 and w["calls"] >= 1, w
    assert w["errors"]["max_abs"] >= 0.0  # the check ran on the reference's outputs made with the inputs


def test_a_round_no_witness_took_leaves_the_reference_runner_usable(lab: Lab) -> None:
    """A failing evaluation's prestaged round is read and dropped: the next job's reference is
    timed in the reference runner (a stale answer in its channel would have made the supervisor
    discard it, and the solution's own runner time the reference) and its witness prestaged."""
    bad = make_solution("always_raises", RAISES, lab.definition)
    failed = evaluate_via_worker(lab.definition, bad, rms_workload(32, uuid="prestage_failed"), _shim_build(bad, lab.cache),
                                 lab.config, dataset_root=lab.dataset)
    assert failed.evaluation.status.value == "RUNTIME_ERROR", failed.evaluation.log
    t = _good(lab, "prestage_after_failure")  # a new workload: its reference is timed now, not cached
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log
    assert ev.extra.get("reference_source") == "reference_runner", ev.extra
    assert ev.extra.get("reference_cached") is False, ev.extra
    assert ev.extra["witness"]["prestaged"] is True, ev.extra["witness"]
