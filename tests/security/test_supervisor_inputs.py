"""What the solution's runner sends the supervisor is hostile input (session 19's attacks): its
environment, its charge of a failure, the depth of its numbers, the types and size of its replies,
the names in the witness's descriptions. Each must cost only the solution's own trace, filed under
the real hardware, and leave the worker and the next evaluation as they were."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from flashinfer_bench.data import Trace
from flashinfer_bench.data.charge import charged_party

from tests.bench.conftest import rms_workload
from .conftest import Lab, flags

WL = rms_workload(16, uuid="rms_supervisor_inputs")


def _real(lab: Lab) -> Trace:
    t = lab.run_good(WL)
    assert t.evaluation.status.value == "PASSED", t.evaluation.log
    return t


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _cmdline(d: Path) -> bytes:
    try:
        return (d / "cmdline").read_bytes()
    except OSError:  # gone meanwhile
        return b""


def _worker_pid(lab: Lab) -> int:
    pids = [int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit() and
            b"flashinfer_bench.bench.worker" in _cmdline(d) and str(lab.worker_dir).encode() in _cmdline(d)]
    assert len(pids) == 1, pids
    return pids[0]


def test_the_hardware_and_libraries_of_a_trace_are_the_supervisors(lab: Lab) -> None:
    """`forge_hardware` set its evaluation's environment to an "NVIDIA B200" with torch 9.9.9
    (another trace identity: a result filed under another GPU, or a failure that never replaces
    an older PASSED trace)."""
    real = _real(lab).evaluation.environment
    t = lab.run("forge_hardware", workload=WL)
    env = t.evaluation.environment
    assert env.hardware == real.hardware and "B200" not in json.dumps(env.model_dump()), env
    assert env.libs == real.libs and env.model_dump().get("device") == "cpu", env


def test_a_solution_cannot_charge_its_failure_to_the_machine(lab: Lab) -> None:
    """`charge_environment` raised "environment error (not the solution's): CUDA driver reset"
    from run(): the pipeline kept the failure out of the dataset and exited blaming the machine.
    The reference ran in the reference runner, so the failure is the solution's."""
    t = lab.run("charge_environment", workload=WL)
    assert t.evaluation.status.value == "RUNTIME_ERROR", t.evaluation.log[-1500:]
    assert charged_party(t) == "solution", t.evaluation.log[:600]


def test_numbers_nested_too_deep_are_cut_and_the_trace_reads_back(lab: Lab) -> None:
    """`deep_extra` put a list nested 220 deep into its extra: the trace was written and could not
    be read back (the client raised; merging the definition's traces lost every new result)."""
    t = lab.run("deep_extra", workload=WL, DEPTH=220)
    assert Trace.model_validate_json(t.model_dump_json()) == t
    assert "nested too deep" in t.model_dump_json()
    assert _real(lab)


def test_witness_replies_of_unexpected_types_fail_the_solution_not_the_job(lab: Lab) -> None:
    """`witness_reply_types` answered the witness with `calls = [0, 0, ...]` (its latency forged
    /100): a TypeError ended the worker's job, the client got a trace of "unavailable (cpu)"
    hardware and tried the solution again. Now its own trace fails."""
    real = _real(lab).evaluation.environment.hardware
    t = lab.run("witness_reply_types", workload=WL)
    ev = t.evaluation
    assert ev.status.value in ("RUNTIME_ERROR", "INCORRECT_NUMERICAL"), ev.log[-1500:]
    assert ev.environment.hardware == real and "unavailable" not in ev.environment.hardware
    assert flags(t) & {"witness_wrong", "witness_failed"} or "witness_" in ev.log, ev.log[-1500:]
    assert _real(lab)


def test_a_latency_under_a_nanosecond_is_implausible(lab: Lab) -> None:
    """`subnormal_latency` claimed 1e-320 ms (an infinite speedup): the plausibility check let it
    through and the witness's arithmetic raised, ending the job."""
    real = _real(lab).evaluation.environment.hardware
    t = lab.run("subnormal_latency", workload=WL)
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR" and "implausible" in ev.log, ev.log[-1500:]
    assert ev.environment.hardware == real


def test_a_huge_reply_is_refused_before_it_is_parsed(lab: Lab) -> None:
    """`reply_bomb` wrote a 200 MiB `[{},{},...]` frame to its channel: the worker parsed it whole
    (5.2 GB at its peak) before the seal refused it. A runner's message is capped at 4 MiB."""
    worker = _worker_pid(lab)
    before = _peak_kib(worker)
    t = lab.run("reply_bomb", workload=WL, MB=200)
    assert t.evaluation.status.value == "RUNTIME_ERROR", t.evaluation.log[-1500:]
    assert "forged_result" in t.evaluation.log and "MiB it may send" in t.evaluation.log, t.evaluation.log[:500]
    grown = _peak_kib(worker) - before
    assert grown < 512 * 1024, f"the worker's peak memory grew by {grown} KiB"
    assert _real(lab)


def test_a_dtype_name_in_the_witness_description_imports_nothing(lab: Lab) -> None:
    """`witness_dtype_import` described its outputs with dtype "_inductor": `getattr(torch, name)`
    imported ~900 modules into the reference runner. Now a name outside torch's dtypes is
    unreadable outputs, and nothing is imported."""
    t = lab.run("witness_dtype_import", workload=WL)
    ev = t.evaluation
    assert ev.status.value == "INCORRECT_NUMERICAL" and "witness_wrong" in flags(t), ev.log[-1500:]
    assert "unknown dtype" in ev.log, ev.log[-1500:]


@pytest.mark.parametrize("kind", ["bytes", "deep", "digits"])
def test_a_reply_that_is_not_json_fails_only_the_solution(lab: Lab, kind: str) -> None:
    """`reply_garbage` writes a frame of non-UTF-8 bytes, JSON nested 100,000 deep (the parser's
    RecursionError) or a 5,000-digit number to its channel before its reply: the solution's own
    trace fails, filed under the real hardware, and the next evaluation runs."""
    real = _real(lab).evaluation.environment.hardware
    t = lab.run("reply_garbage", workload=WL, KIND=kind)
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR" and "forged_result" in ev.log, ev.log[:600]
    assert ev.environment.hardware == real
    assert _real(lab)
