"""A machine slower at the witness than when the claims were measured (CI's 2-core VM under the
suite's load: an honest 2.26 ms call witnessed at 7.1 ms in every round) must not dispute an
honest solution; it may not excuse a forgery either. The witness runs the definition's reference
in the reference runner beside its rounds (`_Witness.calibrate`) and widens the bound by the
reference's own slowdown, at most LOAD_MAX.

The slowdown is simulated where it is deterministic: the reference (dataset code, trusted) and the
solutions spin longer while the garbage collector is off, as it is only inside the witness's
measured calls (`witness.run`), never while the evaluation times them.
"""
from __future__ import annotations

from flashinfer_bench.bench.client import evaluate_via_worker
from flashinfer_bench.bench.loader import _shim_build
from flashinfer_bench.bench.sandbox.witness import LOAD_MAX
from flashinfer_bench.data import Definition

from tests.bench.conftest import make_solution, rms_definition, rms_workload
from tests.security.conftest import Lab

BASE_MS = 1.0

SLOWED = """import gc
import time

import torch


def _spin(ms):
    end = time.thread_time() + ms / 1e3
    while time.thread_time() < end:
        pass


def run(x, weight, eps):
    _spin(__BASE__ * (1.0 if gc.isenabled() else __SLOWER__))
    xf = x.to(torch.float32)
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (xf * rstd * weight.to(torch.float32)).to(torch.float16)
"""


def _code(slower: float) -> str:
    return SLOWED.replace("__BASE__", str(BASE_MS)).replace("__SLOWER__", str(slower))


def _definition(machine_slower: float) -> Definition:
    d = rms_definition(name=f"rmsnorm_slowed_x{str(machine_slower).replace('.', '_')}").model_dump(mode="json")
    d["reference"] = _code(machine_slower)
    return Definition.model_validate(d)


def _run(lab: Lab, machine_slower: float, solution_slower: float, uuid: str):
    d = _definition(machine_slower)
    sol = make_solution(f"slowed_x{str(solution_slower).replace('.', '_')}", _code(solution_slower), d)
    return evaluate_via_worker(d, sol, rms_workload(16, uuid=uuid), _shim_build(sol, lab.cache), lab.config,
                               dataset_root=lab.dataset).evaluation


def test_an_honest_call_on_a_machine_slower_at_the_witness_passes(lab: Lab) -> None:
    # 4.5x: under the suite's load the claim's wall time rose to ~1.4 ms, and a 2.8x slowdown
    # (2.8 ms witnessed) was then within the unwidened bound, which this test must exceed
    ev = _run(lab, 4.5, 4.5, "slowed_honest")
    assert ev.status.value == "PASSED", ev.log
    w = ev.correctness.extra["witness"]
    lat = ev.performance.latency_ms
    # the unwidened bound (2x + 0.25 ms a call for 8-call rounds) would have disputed it
    assert w["est_ms"] > 2.0 * lat + 0.25, (w, lat)
    # the reference's own latency was measured in wall time (a busy machine raises it, not its CPU time)
    assert 1.0 < w["load"] <= LOAD_MAX and w["reference_now_ms"] > 2.0 * BASE_MS, w
    assert w["est_ms"] <= w["bound_ms"], w


def test_a_slower_machine_widens_the_bound_by_at_most_load_max(lab: Lab) -> None:
    """The reference 10x slower in the witness (the widening capped at 3x): a call witnessed 20x
    its claim is still disputed."""
    ev = _run(lab, 10.0, 20.0, "slowed_forged")
    assert ev.status.value == "RUNTIME_ERROR", ev.log
    assert "timing_disputed" in ev.log and f"the bound widened {LOAD_MAX:.2f}x" in ev.log, ev.log


LATE_FAST = """import gc
import time

import torch

_witnessed = [0]


def _spin(ms):
    end = time.thread_time() + ms / 1e3
    while time.thread_time() < end:
        pass


def run(x, weight, eps):
    if not gc.isenabled():  # a witnessed call: the first __SLOW__ draws take the slow path
        _witnessed[0] += 1
    _spin(10.0 * (3.0 if 0 < _witnessed[0] <= __SLOW__ and not gc.isenabled() else 1.0))
    xf = x.to(torch.float32)
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (xf * rstd * weight.to(torch.float32)).to(torch.float16)
"""


def test_a_costly_call_whose_cost_depends_on_its_inputs_gets_sixteen_draws(lab: Lab) -> None:
    """A 10 ms call (one call a round) that takes its slow path on the first 9 witnessed draws, as
    the fp8 MoE does on ~77% of fresh inputs: with 8 rounds it was disputed although honest; the
    witness now draws up to 16 one-call rounds and the tenth is fast."""
    d = rms_definition(name="rmsnorm_late_fast")
    sol = make_solution("late_fast", LATE_FAST.replace("__SLOW__", "9"), d)
    ev = evaluate_via_worker(d, sol, rms_workload(16, uuid="late_fast"), _shim_build(sol, lab.cache), lab.config,
                             dataset_root=lab.dataset).evaluation
    assert ev.status.value == "PASSED", ev.log
    w = ev.correctness.extra["witness"]
    assert w["k"] == 1 and w["calls"] == 10, w


CHEAP_BASE_MS = 0.02  # a cheap call: a round has 128 calls, the cheap rounds' bound (2x + 15.6 us a call)


def _run_cheap(lab: Lab, machine_slower: float, solution_slower: float, uuid: str):
    code = lambda slower: SLOWED.replace("__BASE__", str(CHEAP_BASE_MS)).replace("__SLOWER__", str(slower))  # noqa: E731
    d = rms_definition(name=f"rmsnorm_cheap_slowed_x{str(machine_slower).replace('.', '_')}").model_dump(mode="json")
    d["reference"] = code(machine_slower)
    d = Definition.model_validate(d)
    sol = make_solution(f"cheap_slowed_x{str(solution_slower).replace('.', '_')}", code(solution_slower), d)
    return evaluate_via_worker(d, sol, rms_workload(16, uuid=uuid), _shim_build(sol, lab.cache), lab.config,
                               dataset_root=lab.dataset).evaluation


def test_an_honest_cheap_call_on_a_machine_slower_at_the_witness_passes(lab: Lab) -> None:
    """CI (session 22): an honest 11.4 us call was disputed in all 8 rounds of 128 calls while the
    suite loaded the VM, and an honest 2048-row call with a calibration after its rounds that
    read no load; the reference now runs right after each cheap round over the bound."""
    # 6x: under the suite's load the claim itself (wall time) came out ~1.5x higher, and a 4x
    # slowdown was then within the unwidened bound, which this test must exceed
    ev = _run_cheap(lab, 6.0, 6.0, "cheap_slowed_honest")
    assert ev.status.value == "PASSED", ev.log
    w = ev.correctness.extra["witness"]
    lat = ev.performance.latency_ms
    assert w["k"] >= 32, w
    # the reference ran after each round over the bound, and its least reading widened the bound
    read = [f for f in w["round_load"] if f is not None]
    assert read and 1.0 < min(read) == w["load"] <= LOAD_MAX, w
    assert w["est_ms"] <= w["bound_ms"], w
    least_null = min(n for n in w["round_null_ms"] if n is not None)
    slowest = max(ms[1] - least_null for ms in w["round_ms"]) / w["k"]
    assert slowest > 2.0 * lat + 0.25 * 8 / w["k"], (w, lat)  # the unwidened bound would have disputed it


def test_a_slower_machine_widens_a_cheap_calls_bound_by_at_most_load_max(lab: Lab) -> None:
    ev = _run_cheap(lab, 10.0, 20.0, "cheap_slowed_forged")
    assert ev.status.value == "RUNTIME_ERROR", ev.log
    assert "timing_disputed" in ev.log and f"the bound widened {LOAD_MAX:.2f}x" in ev.log, ev.log


SPIKY_REFERENCE = """import gc
import time

import torch

_witnessed = [0]


def _spin(ms):
    end = time.thread_time() + ms / 1e3
    while time.thread_time() < end:
        pass


def run(x, weight, eps):
    slow = 1.0
    if not gc.isenabled():  # a witnessed call: the reference's 2nd and 3rd rounds run 6x slower
        _witnessed[0] += 1
        slow = 6.0 if 1 <= (_witnessed[0] - 1) // __K__ <= 2 else 1.0
    _spin(__BASE__ * slow)
    xf = x.to(torch.float32)
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (xf * rstd * weight.to(torch.float32)).to(torch.float16)
"""


def test_one_slow_reference_round_does_not_excuse_a_forged_round(lab: Lab) -> None:
    """A reference round is one draw of the machine's noise, and a forger's rounds over the bound
    get one each: two reference rounds read 1.56x and 1.66x on the idle VM and `rewrite_stats_cheap`,
    a 20x forgery, PASSED at 17x (session 22). Here the reference's 2nd and 3rd witnessed rounds
    are 6x slower (nothing else is) and the cheap solution 4x slower in the witness than its claim:
    the bound widens by the least load the reference read after any round, which a lasting load
    (CI's) is in and a passing one is not. (Each round divided by the reading after it: PASSED.)"""
    d = rms_definition(name="rmsnorm_spiky_reference").model_dump(mode="json")
    d["reference"] = SPIKY_REFERENCE.replace("__BASE__", str(CHEAP_BASE_MS)).replace("__K__", "128")
    d = Definition.model_validate(d)
    code = SLOWED.replace("__BASE__", str(CHEAP_BASE_MS)).replace("__SLOWER__", "4.0")
    sol = make_solution("cheap_forged_spiky", code, d)
    ev = evaluate_via_worker(d, sol, rms_workload(16, uuid="cheap_spiky"), _shim_build(sol, lab.cache), lab.config,
                             dataset_root=lab.dataset).evaluation
    assert ev.status.value == "RUNTIME_ERROR" and "timing_disputed" in ev.log, ev.log
