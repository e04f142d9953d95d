"""Red team, part two: hostile solutions against the confined runner, through the real worker.

Each attack must end non-PASSED or flagged, the dataset, the other solution's artifact and the
project must be byte-for-byte what they were, and the next evaluation must run normally.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import threading
import time
from pathlib import Path
from typing import List

import pytest

from flashinfer_bench.bench.client import evaluate_via_worker, ping_worker, shutdown_worker
from flashinfer_bench.bench.loader import _shim_build
from flashinfer_bench.bench.sandbox import supervise
from flashinfer_bench.sandbox.procfs import task_state

from tests.bench.conftest import make_solution, rms_workload
from .conftest import ATTACKS, SECRET, Lab, flags


def _denied(log: str) -> bool:
    """A write refused by Landlock (PermissionError) or by the read-only mount (EROFS)."""
    return "PermissionError" in log or "Read-only file system" in log


def _assert_next_is_fine(lab: Lab) -> None:
    t = lab.run_good()
    assert t.evaluation.status.value == "PASSED", t.evaluation.log


def test_the_runner_is_confined_and_says_so(lab: Lab, unchanged) -> None:
    t = lab.run_good()
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log
    sandbox = ev.environment.model_dump().get("sandbox", "")
    # what holds on this machine (a Firecracker VM, root, kernel 6.x with Landlock ABI >= 6)
    for layer in ("landlock", "seccomp", "netns", "pidns", "userns", "nocaps", "rlimits"):
        assert layer in sandbox.split("+"), sandbox


def test_writing_a_passed_trace_into_the_dataset(lab: Lab, unchanged) -> None:
    t = lab.run("write_passed_trace")
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log
    assert _denied(ev.log) and "traces" in ev.log
    unchanged()
    _assert_next_is_fine(lab)


def test_quiet_writes_everywhere_are_all_denied(lab: Lab, unchanged) -> None:
    t = lab.run("write_quietly")
    ev = t.evaluation
    # it computes the right answer and swallowed the errors: an ordinary solution, nothing written
    assert ev.status.value == "PASSED", ev.log
    assert "BREACH" not in ev.log, ev.log
    assert ev.log.count("denied:") >= 11, ev.log
    unchanged()


def test_editing_another_solution(lab: Lab, unchanged) -> None:
    t = lab.run("edit_other_solution")
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log
    assert _denied(ev.log)
    unchanged()
    _assert_next_is_fine(lab)


def _tcp_listener() -> tuple:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    return srv, srv.getsockname()[1]


def test_opening_sockets_to_localhost(lab: Lab, unchanged) -> None:
    tcp, port = _tcp_listener()
    abstract_name = f"fib-test-{os.getpid()}-{time.monotonic_ns()}"
    uds = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    uds.bind("\0" + abstract_name)
    uds.listen(8)
    uds.settimeout(0.2)
    accepted: List[str] = []
    stop = threading.Event()

    def accept_loop() -> None:
        while not stop.is_set():
            for s in (tcp, uds):
                try:
                    c, _ = s.accept()
                    accepted.append(str(s.getsockname()))
                    c.close()
                except OSError:
                    pass

    th = threading.Thread(target=accept_loop, daemon=True)
    th.start()
    try:
        t = lab.run("socket_localhost", targets={"port": port, "abstract": abstract_name})
    finally:
        stop.set()
        th.join(2)
        tcp.close()
        uds.close()
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log
    assert "BREACH" not in ev.log and "no network" in ev.log, ev.log
    assert ev.log.count("denied:") == 3, ev.log
    assert not accepted, f"the solution reached {accepted}"
    assert ping_worker("cpu", lab.config) is not None, "the worker must still answer"
    unchanged()


def test_scraping_the_reference_from_memory(lab: Lab, unchanged) -> None:
    t = lab.run("scrape_reference")
    ev = t.evaluation
    # the correctness trials' references can be found and copied; the timed calls' references are
    # computed only after each call returned, so the garbage it returns there is caught
    assert ev.status.value == "INCORRECT_NUMERICAL", ev.log
    assert "re-checked timed calls" in ev.log or "audit" in ev.log, ev.log
    assert ev.performance is None
    unchanged()


def test_reading_the_supervisors_files(lab: Lab, unchanged) -> None:
    t = lab.run("read_supervisor_files")
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log
    assert lab.marker not in ev.log, "the supervisor's secret reached the trace"
    assert "root:" not in ev.log  # /etc/shadow
    assert ev.log.count("denied:") == 4, ev.log
    unchanged()


def test_patching_the_harness_and_timer(lab: Lab, unchanged) -> None:
    t = lab.run("patch_harness")
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log
    assert "timer_patched" in ev.log
    for name in ("timing._perf_counter", "torch.cuda.synchronize", "evaluate.mismatch_count"):
        assert name in ev.log, (name, ev.log)
    unchanged()
    _assert_next_is_fine(lab)  # the originals are back (a fresh runner)


def _processes() -> int:
    return sum(1 for p in os.listdir("/proc") if p.isdigit())


def test_fork_bomb_is_bounded_and_cleaned_up(lab: Lab, unchanged) -> None:
    _assert_next_is_fine(lab)
    base = _processes()
    t0 = time.monotonic()
    t = lab.run("fork_bomb", N=2000, SLEEP=60)
    took = time.monotonic() - t0
    ev = t.evaluation
    assert ev.status.value in ("PASSED", "RUNTIME_ERROR"), ev.log
    if ev.status.value == "PASSED":
        assert "background_work" in flags(t) and ev.correctness.extra["suspect"], ev.log
    assert "fork stopped after" in ev.log, ev.log  # the process limit, not the 2000, ended it
    assert took < 30, took
    deadline = time.monotonic() + 15
    while _processes() > base + 8 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes() <= base + 8, f"{_processes() - base} processes more than before the bomb"
    _assert_next_is_fine(lab)
    unchanged()


def test_background_thread_still_working(lab: Lab, unchanged) -> None:
    t = lab.run("background_thread")
    ev = t.evaluation
    if ev.status.value != "PASSED":
        # the thread's CPU time is the solution's: where the witness's rounds saw it over the
        # bound (a busy 2-core machine), the timing is disputed, never PASSED unflagged
        assert ev.status.value == "RUNTIME_ERROR" and "timing_disputed" in ev.log, ev.log
    else:  # its outputs are right, but it is flagged
        assert "background_work" in flags(t) and ev.correctness.extra["suspect"] is True
        assert "keeps-working" in " ".join(ev.correctness.extra.get("notes", []))
    _assert_next_is_fine(lab)
    unchanged()


def test_forged_result_lines_and_frames(lab: Lab, unchanged) -> None:
    t = lab.run("forge_result")
    ev = t.evaluation
    assert ev.status.value != "PASSED", ev.log
    assert ev.status.value in ("RUNTIME_ERROR", "INCORRECT_NUMERICAL"), ev.log
    if ev.status.value == "RUNTIME_ERROR":
        assert "forged_result" in ev.log, ev.log
    assert ev.performance is None
    _assert_next_is_fine(lab)
    unchanged()


def test_host_memory_limit_of_one_allocation(lab: Lab) -> None:
    t = lab.run("big_alloc", BYTES=3 << 30)
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log
    assert "allocate" in ev.log or "MemoryError" in ev.log, ev.log
    _assert_next_is_fine(lab)


def test_host_memory_limit_of_a_process_tree(lab: Lab) -> None:
    t = lab.run("memory_children", N=4, EACH=700 << 20)
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log
    assert "host memory limit exceeded" in ev.log, ev.log
    _assert_next_is_fine(lab)


def test_log_size_limit(lab: Lab) -> None:
    t = lab.run("huge_log", LINES=40_000)  # 40 MiB against a 16 MiB limit
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log
    assert "file size limit exceeded" in ev.log, ev.log[:2000]
    assert len(ev.log) < 200_000  # the trace carries a capped head and tail
    _assert_next_is_fine(lab)


def test_no_confinement_is_refused_unless_allowed(tmp_path: Path, lab: Lab) -> None:
    from flashinfer_bench.bench.client import evaluate_via_worker, shutdown_worker

    from .conftest import env_vars

    cfg = lab.config.model_copy(update={"worker_dir": str(tmp_path / "w")})
    with env_vars({"FIB_SANDBOX": "off"}):
        try:
            t = evaluate_via_worker(lab.definition, lab.good, rms_workload(8), lab.good_build, cfg, dataset_root=lab.dataset)
            ev = t.evaluation
            assert ev.status.value == "RUNTIME_ERROR", ev.log
            assert "refusing to run an untrusted solution unconfined" in ev.log
            assert "allow_unconfined" in ev.log
            ok = evaluate_via_worker(
                lab.definition, lab.good, rms_workload(8), lab.good_build,
                cfg.model_copy(update={"allow_unconfined": True}), dataset_root=lab.dataset,
            )
            assert ok.evaluation.status.value == "PASSED", ok.evaluation.log
            assert ok.evaluation.environment.model_dump().get("sandbox") == "none"
        finally:
            shutdown_worker("cpu", cfg)


def test_file_inputs_are_read_from_a_dataset_outside_the_readable_set(lab: Lab, tmp_path: Path) -> None:
    """A workload whose inputs come from a safetensors blob of a dataset the runner was not started
    with: the supervisor starts a runner that may read it, and the evaluation passes."""
    import torch
    from safetensors.torch import save_file

    from flashinfer_bench.bench.client import evaluate_via_worker
    from flashinfer_bench.data import Workload

    other = tmp_path / "other-dataset"
    (other / "blob").mkdir(parents=True)
    save_file({"x": torch.randn(4, 256).half()}, str(other / "blob" / "x.safetensors"))
    wl = Workload(
        axes={"batch_size": 4}, uuid="rms_blob",
        inputs={"x": {"type": "safetensors", "path": "blob/x.safetensors", "tensor_key": "x"},
                "weight": {"type": "random"}, "eps": {"type": "scalar", "value": 1e-6}},
    )
    t = evaluate_via_worker(lab.definition, lab.good, wl, lab.good_build, lab.config, dataset_root=other)
    assert t.evaluation.status.value == "PASSED", t.evaluation.log


def test_patching_a_torch_op_is_flagged(lab: Lab) -> None:
    t = lab.run("patch_torch_op")
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log
    assert "torch_patched" in flags(t) and ev.correctness.extra["suspect"] is True
    assert "torch.nn.functional.rms_norm" in " ".join(ev.correctness.extra.get("notes", []))
    _assert_next_is_fine(lab)  # GOOD_VR calls F.rms_norm: the original is back


def test_the_recheck_schedule_is_unknowable_before_a_call_returns(lab: Lab, unchanged) -> None:
    """Garbage on every timed call the harness has not (yet) decided to re-check: caught only if
    the decision is made after the call returned."""
    t = lab.run("predict_rechecks")
    ev = t.evaluation
    assert ev.status.value == "INCORRECT_NUMERICAL", (ev.status, ev.log[-2000:])
    assert "re-checked timed calls" in ev.log
    unchanged()
    _assert_next_is_fine(lab)


def test_the_runner_sees_no_secret_of_the_user(lab: Lab, unchanged) -> None:
    t = lab.run("env_secret")
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log
    assert "ENV DUMP" in ev.log
    for v in SECRET.values():
        assert v not in t.model_dump_json()
    assert "FIB_TEST_API_SECRET" not in ev.log
    _assert_next_is_fine(lab)


def test_a_lone_surrogate_in_output_and_message_costs_only_its_trace(lab: Lab, unchanged) -> None:
    t = lab.run("surrogate_log")
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log
    assert "lone surrogate" in ev.log and "half a pair" in ev.log
    assert "unavailable" not in ev.environment.hardware
    t.model_dump_json().encode("utf-8")  # the trace is valid UTF-8
    _assert_next_is_fine(lab)


def test_build_time_code_is_confined_and_leaves_nothing_running(lab: Lab, unchanged) -> None:
    """The entry module's body runs at build time (import, warm-up): confined like a runner, and
    every process it starts is gone when the build returns."""
    import re

    from flashinfer_bench.compile import build

    sol = lab.solution("build_time")
    r = build(sol, lab.definition, lab.tmp / "build-cache")
    log = r.log or ""
    report = next((line for line in log.splitlines() if line.startswith("BUILD-TIME REPORT")), "")
    assert report, (r.status, r.message, log[-2000:])
    assert "BREACH" not in report, report
    assert report.count("denied:") == 6, report
    m = re.search(r"DAEMON PID (\d+)", log)
    assert m, log[-2000:]
    assert not Path(f"/proc/{m.group(1)}").exists() or "zombie" in Path(f"/proc/{m.group(1)}/status").read_text().lower()
    assert lab.breaches() == []
    unchanged()


def test_a_solution_cannot_slow_or_break_the_next_one_or_the_reference(lab: Lab) -> None:
    """Cross-talk: a solution patches a torch method the reference and others use and exhausts
    file descriptors. The honest solution after it runs in its own runner and the reference is
    timed in a runner where no solution ever ran: both keep their status and their latency."""
    wl = rms_workload(64, uuid="crosstalk")
    before = evaluate_via_worker(lab.definition, lab.good, wl, lab.good_build, lab.config, dataset_root=lab.dataset)
    assert before.evaluation.status.value == "PASSED", before.evaluation.log
    lab.run("slow_competitors", workload=wl)
    after = evaluate_via_worker(lab.definition, lab.good, wl, lab.good_build, lab.config, dataset_root=lab.dataset)
    ev = after.evaluation
    assert ev.status.value == "PASSED", ev.log
    b, a = before.evaluation.performance, ev.performance
    # the patch costs 2 ms a call: noise on this CPU is well under 3x
    assert a.latency_ms < 3 * b.latency_ms + 0.5, (b.latency_ms, a.latency_ms)
    assert a.reference_latency_ms < 3 * b.reference_latency_ms + 0.5, (b.reference_latency_ms, a.reference_latency_ms)


def _cpu_s(pid: int) -> float:
    """CPU seconds a process used (all its threads), from /proc: 0 once it is gone."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def _runners_of(worker_dir: Path) -> List[int]:
    """Every process under the worker of `worker_dir` (its runners, the zygote and its children),
    found by the supervisor's own walk of a process tree; other tests' workers are not looked at."""
    return [p for w in _workers_of(worker_dir) for p in supervise._tree(w)[1:]]


def _workers_of(worker_dir: Path) -> List[int]:
    return [int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit() and
            b"flashinfer_bench.bench.worker" in _cmdline(d) and str(worker_dir).encode() in _cmdline(d)]


def _stopped_runners(worker_dir: Path) -> List[int]:
    """The processes under the worker of `worker_dir` that are stopped (state T)."""
    return [p for p in _runners_of(worker_dir) if _state(p) == "T"]


def _watch_states(pids: List[int], during) -> tuple:  # noqa: ANN001 - a callable
    """Run `during()` while sampling the states of `pids` every 2 ms: (its result, the share of
    samples in which every one was stopped, the CPU seconds they used, the wall seconds)."""
    samples: List[bool] = []
    watching = [True]

    def watch() -> None:
        while watching[0]:
            samples.append(all(_state(p) in ("T", "gone") for p in pids))
            time.sleep(0.002)

    w = threading.Thread(target=watch, daemon=True)
    c0, w0 = sum(_cpu_s(p) for p in pids), time.perf_counter()
    w.start()
    try:
        out = during()
    finally:
        watching[0] = False
        w.join()
    return out, samples.count(True) / max(1, len(samples)), sum(_cpu_s(p) for p in pids) - c0, time.perf_counter() - w0


def test_threads_hidden_from_the_runner_run_nothing_while_others_are_measured(tmp_path: Path, monkeypatch) -> None:
    """hidden_thread_burner starts four threads `threading` does not list, quiet while it is called
    and burning both cores as soon as it is not. A runner that has run a solution runs only while
    its worker evaluates that solution: between its jobs it is stopped (SIGSTOP, with everything
    it started), and it stays stopped while its own worker times the reference of its next
    workload, while its worker evaluates another solution, and while *another worker* of the
    machine evaluates (those hold the device's measurement lock). So the threads get no CPU
    there, and the reference and honest solutions keep their times. (On a CPU the timings are
    CPU time and hardly move anyway; on a GPU the same threads' kernels would share the device
    with the measured ones.) Its own measurement lock, shared by the two workers here only."""
    monkeypatch.setenv("FIB_MEASURE_LOCK_DIR", str(tmp_path / "locks"))
    # this test is about the stops between jobs: the burner's own witness is not its subject (in a
    # stepped CPU round its threads burn between the steps, and its own claim may then be disputed)
    monkeypatch.setenv("FIB_WITNESS_STEPPED", "off")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    lab, other = Lab(tmp_path / "a"), Lab(tmp_path / "b")
    lab.start()
    other.start()

    def good(where: Lab, wl):
        return evaluate_via_worker(where.definition, where.good, wl, where.good_build, where.config,
                                   dataset_root=where.dataset)

    honest_wl = rms_workload(2048, uuid="burner_honest")
    before = good(other, honest_wl)
    ref_before = good(lab, rms_workload(256, uuid="burner_ref_0")).evaluation.performance.reference_latency_ms
    honest_runner = set(_stopped_runners(lab.worker_dir))  # the honest solution's, stopped between its jobs too
    assert honest_runner, "no runner of the worker is stopped between its jobs"
    t = lab.run("hidden_thread_burner", workload=rms_workload(64, uuid="burner_own"))
    assert t.evaluation.status.value == "PASSED", t.evaluation.log[-2000:]
    # between its jobs the burner's runner (current in its worker) is stopped, all of it
    pids = [p for p in _stopped_runners(lab.worker_dir) if p not in honest_runner]
    assert pids, "the burner's runner is not stopped between its jobs"
    idle = sum(_cpu_s(p) for p in pids)
    time.sleep(0.5)
    idle = sum(_cpu_s(p) for p in pids) - idle
    # the control: resumed by hand, its threads burn (both cores idle: ~0.9 CPU s a second;
    # beside the rest of the suite on 2 cores, ~0.3-0.6: two seconds, so that a loaded moment
    # cannot take it under the floor); then stopped again, as its worker left it
    for p in pids:
        os.kill(p, signal.SIGCONT)
    live = sum(_cpu_s(p) for p in pids)
    time.sleep(2.0)
    live = sum(_cpu_s(p) for p in pids) - live
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    # a stop takes effect once each burning thread is scheduled again: under the suite's load that
    # took ~50 ms, which the window below counted as the burner running beside the next evaluation
    end = time.monotonic() + 2.0
    while time.monotonic() < end and not all(_state(p) in ("T", "gone") for p in pids):
        time.sleep(0.002)
    assert live > 0.2, ("the attack's threads did not run when resumed: the test would prove nothing", live)
    assert idle < 0.05, ("the burner's runner used CPU between its jobs", idle)
    # another worker of the machine measures: the burner stays stopped throughout
    after_other, stopped_o, burnt_o, wall_o = _watch_states(pids, lambda: good(other, honest_wl))
    # its next workload: the reference is timed while its runner is current (stopped meanwhile)
    t2 = lab.run("hidden_thread_burner", workload=rms_workload(256, uuid="burner_ref_1"))
    assert t2.evaluation.status.value == "PASSED", t2.evaluation.log[-2000:]
    ref_after = t2.evaluation.performance.reference_latency_ms
    # its own worker evaluates another solution: parked, stopped
    after_own, stopped_w, burnt_w, wall_w = _watch_states(pids, lambda: good(lab, honest_wl))
    print("BURNER", pids, f"resumed by hand {live:.2f} CPU s in 2 s, between jobs {idle:.2f} CPU s in 0.5 s; "
          f"another worker's evaluation: stopped {stopped_o:.0%} of {wall_o:.2f} s, {burnt_o:.2f} CPU s; "
          f"its own worker's next evaluation of another: stopped {stopped_w:.0%} of {wall_w:.2f} s, "
          f"{burnt_w:.2f} CPU s; reference", ref_before, "->", ref_after, "; honest",
          before.evaluation.performance.latency_ms, "->",
          [tr.evaluation.performance.latency_ms for tr in (after_other, after_own) if tr.evaluation.performance])
    for tr in (after_other, after_own):
        assert tr.evaluation.status.value == "PASSED", tr.evaluation.log
    # before the stop between jobs: another worker's evaluation 14% stopped (its own 97-99%)
    assert stopped_o > 0.95 and burnt_o < 0.05, (stopped_o, burnt_o, wall_o)
    assert stopped_w > 0.95 and burnt_w < 0.05, (stopped_w, burnt_w, wall_w)
    # the burner used no CPU during them (above), so it cannot have moved their times; the times
    # themselves are not compared here: under the suite's load on 2 cores an honest latency moved
    # 3.5x between two of these evaluations with the burner stopped throughout (0.01 CPU s burnt).
    # The attack table (benchmarks/attack_table.py, a quiet machine) compares them.
    for w in (lab, other):
        shutdown_worker("cpu", w.config)


def test_processes_left_running_are_seen_from_outside_the_runner(tmp_path: Path, monkeypatch) -> None:
    """hopping_burner leaves two chains of processes whose every member forks its successor and
    exits within ~3 ms, each in a session of its own, the first one reaped at once: the runner's
    own check of leftover children (in the solution's process) sees nothing, and a process one
    walk of the tree lists may be gone before the stop reaches it while its successor was not
    listed. The supervisor looks at the runner's process tree itself after the evaluation: the
    trace is marked `background_work` (suspect) and the runner replaced, so none of the chains
    lives into another job; none is left under the worker."""
    monkeypatch.setenv("FIB_MEASURE_LOCK_DIR", str(tmp_path / "locks"))
    lab = Lab(tmp_path)
    lab.start()
    t = lab.run("hopping_burner", workload=rms_workload(64, uuid="hopper"))
    ev = t.evaluation
    if ev.status.value == "RUNTIME_ERROR":
        # the chains burn in the runner's cgroup while its witness round runs (a stepped CPU round
        # lasts longer): their CPU counts against its claim
        assert "timing_disputed" in ev.log, ev.log[-2000:]
    else:
        assert ev.status.value == "PASSED", ev.log[-2000:]
        assert "background_work" in flags(t) and ev.correctness.extra.get("suspect"), ev.correctness.extra
        assert any("supervisor:" in n and "process(es)" in n for n in ev.correctness.extra.get("notes") or []), \
            ev.correctness.extra.get("notes")
    time.sleep(0.5)
    hoppers = [p for p in _runners_of(lab.worker_dir) if b"-S\x00-c\x00" in _cmdline(Path(f"/proc/{p}"))
               and _state(p) not in ("gone", "Z")]
    assert not hoppers, {p: _state(p) for p in hoppers}
    after = lab.run_good(rms_workload(2048, uuid="hopper_honest"))
    assert after.evaluation.status.value == "PASSED", after.evaluation.log[-2000:]
    shutdown_worker("cpu", lab.config)


SLOW_RMS = """import time

import torch


def run(x, weight, eps):
    time.sleep(0.1)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
"""


def _state(pid: int) -> str:
    return task_state(pid) or "gone"


@pytest.mark.parametrize("zygote", ["1", "0"], ids=["forked_runners", "exec_runners"])
def test_a_stopped_runner_does_not_outlive_its_killed_worker(tmp_path: Path, zygote: str) -> None:
    """While a solution is evaluated, the runner parked for another is stopped (SIGSTOP); a
    stopped process never sees its channel close. A worker killed outright (SIGKILL) at that
    moment must still take every runner with it: the runner zygote kills those it forked, the
    keeper (`sandbox.keeper`) every runner (those started from scratch, the default on a GPU)."""
    from tests.bench.conftest import make_solution
    from flashinfer_bench.bench.loader import _shim_build

    own = Lab(tmp_path)
    own.start(env={"FIB_RUNNER_ZYGOTE": zygote})
    first = evaluate_via_worker(own.definition, own.good, rms_workload(8), own.good_build, own.config,
                                dataset_root=own.dataset).evaluation
    assert first.status.value == "PASSED", first.log[-2000:]
    slow = make_solution("slow_rms", SLOW_RMS, own.definition)
    done: List[object] = []
    th = threading.Thread(target=lambda: done.append(evaluate_via_worker(
        own.definition, slow, rms_workload(8), _shim_build(slow, own.cache), own.config, dataset_root=own.dataset)),
        daemon=True)
    th.start()
    stopped: List[int] = []
    end = time.monotonic() + 30
    while time.monotonic() < end and not stopped:  # the good solution's runner, parked and stopped
        stopped = [p for p in _runners_of(own.worker_dir) if _state(p) == "T"]
        time.sleep(0.05)
    assert stopped, "no parked runner was stopped while another solution was evaluated"
    assert not done, "the slow evaluation ended before the worker was killed: the test proves nothing"
    tree = _runners_of(own.worker_dir)
    for w in _workers_of(own.worker_dir):
        os.kill(w, 9)
    end = time.monotonic() + 15
    while time.monotonic() < end and any(_state(p) not in ("gone", "Z") for p in tree):
        time.sleep(0.1)
    left = {p: _state(p) for p in tree if _state(p) not in ("gone", "Z")}
    assert not left, f"processes of the killed worker still there: {left}"


def _cmdline(d: Path) -> bytes:
    try:
        return (d / "cmdline").read_bytes()
    except OSError:
        return b""


def test_nothing_written_to_dev_shm_survives_an_evaluation(lab: Lab) -> None:
    marker = f"{lab.marker}-shm"
    t = lab.run("shm_fill", marker=marker)
    assert t.evaluation.status.value == "PASSED", t.evaluation.log
    assert not Path("/dev/shm", marker).exists()
    # on the CPU the runner may not write there at all
    assert "denied: shm" in t.evaluation.log, t.evaluation.log[-1500:]


def _sysv_segment(key: int) -> List[str]:
    """The host's System V shared memory segments under `key` (/proc/sysvipc/shm lines)."""
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return [ln for ln in lines if ln.split() and int(ln.split()[0]) == key]


def _remove_ipc_leftovers(key: int) -> None:
    """Remove what a failed run of `sysv_ipc_stash` left (the test must not leak it either)."""
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    seg = libc.shmget(key, 0, 0)
    if seg >= 0:
        libc.shmctl(seg, 0, None)  # IPC_RMID
    rt = ctypes.CDLL(ctypes.util.find_library("rt") or ctypes.util.find_library("c"))
    rt.mq_unlink(f"/fib-stash-{key}".encode())


def _mq_exists(key: int) -> bool:
    import ctypes
    import ctypes.util

    rt = ctypes.CDLL(ctypes.util.find_library("rt") or ctypes.util.find_library("c"), use_errno=True)
    q = rt.mq_open(f"/fib-stash-{key}".encode(), os.O_RDONLY | os.O_NONBLOCK)
    if q >= 0:
        os.close(q)
        return True
    return False


def _report(log: str, marker: str) -> str:
    return next((x for x in log.splitlines() if marker in x), "")


def test_a_runner_cannot_write_the_logs_folder(lab: Lab, unchanged) -> None:
    """Every runner could create, truncate and remove files in the worker's logs' folder (Landlock
    WRITE_PLAIN there) until session 19: `log_dir_lockout` planted read-only logs under the next
    evaluations' names (every later runner died on its log), `log_dir_channel` passed a message
    to a later runner in sparse files' sizes, `log_dir_fill` left 320 MiB outside its scratch
    quota. Now an evaluation's log comes as a descriptor: the folder is not writable at all."""
    lock = lab.run("log_dir_lockout").evaluation
    assert lock.status.value == "PASSED", lock.log[-1500:]
    report = _report(lock.log, "LOCKOUT REPORT")  # the refusals first (its first six entries), then the count
    assert report and not re.search(r"planted [1-9]", report) and ("Read-only" in report or "Permission" in report), report
    chan = lab.run("log_dir_channel").evaluation
    report = _report(chan.log, "CHANNEL REPORT")
    assert "received nothing" in report and "write:" in report and "left b" not in report, report
    fill = lab.run("log_dir_fill").evaluation
    assert "wrote 0 MiB" in _report(fill.log, "FILL REPORT"), fill.log[-1500:]
    for _ in range(2):  # the next evaluations log and pass as before
        _assert_next_is_fine(lab)


def test_a_runner_cannot_name_an_earlier_runners_logs(lab: Lab) -> None:
    """What stayed after session 19: a runner may truncate its own logs (the evaluation's, handed
    as a descriptor, and its runner's stdout) to any size, and `stat` any name in the logs'
    folder; the names were a counter (`eval-<i % 64>.log`, `runner-<n>.log`), so
    `log_size_channel` left a tag in its logs' sizes that a later runner of another solution read
    back (session 22); the same through a file's size in its scratch, whose folders were named by
    the counter too. Now each log's and scratch folder's name holds a random part, and an
    evaluation's log is removed when the next evaluation begins (it is in its trace by then)."""
    src = (ATTACKS / "log_size_channel.py").read_text()
    reports = []
    for i in range(2):  # two solutions: two runners, the second after the first
        sol = make_solution(f"attack_log_size_channel_{i}", src + f"\n# solution {i}\n", lab.definition)
        t = evaluate_via_worker(lab.definition, sol, rms_workload(16), _shim_build(sol, lab.cache), lab.config,
                                dataset_root=lab.dataset).evaluation
        assert t.status.value == "PASSED", t.log[-1500:]
        reports.append(_report(t.log, "SIZE CHANNEL REPORT"))
    assert "left " in reports[0] and "eval-" in reports[0] and "scratch" in reports[0], reports  # it did its part
    assert "received nothing" in reports[1], reports
    logs = Path(lab.targets()["logs_dir"])
    # an evaluation's log goes when the next begins (it was read into its trace)
    assert len([p for p in logs.iterdir() if p.name.startswith("eval-")]) <= 1, sorted(p.name for p in logs.iterdir())
    _assert_next_is_fine(lab)


def test_a_forked_runner_holds_no_descriptor_of_the_zygote(lab: Lab) -> None:
    """A runner forked by the runner zygote kept the write end of the zygote's signal wakeup pipe:
    `zygote_wakeup_pipe` grew it to 1 MiB and kept it full while the zygote (never stopped with
    the runner) drained it. The child closes it now."""
    t = lab.run("zygote_wakeup_pipe").evaluation
    assert t.status.value == "PASSED", t.log[-1500:]
    assert "no foreign pipe" in _report(t.log, "ZYGOTE REPORT"), t.log[-1500:]


def test_system_v_shared_memory_and_message_queues_are_refused(lab: Lab) -> None:
    """A System V segment detached but not removed, or a POSIX message queue, outlives its runner
    (no process maps it: no memory watch sees it) and carries data from one evaluation to the
    next: both are refused, and nothing of them is there after two evaluations."""
    key = 0x46000000 | (int.from_bytes(os.urandom(3), "little") & 0xFFFFFF)
    try:
        for mb in (64, 32):  # two solutions (a runner each): the second would find what the first left
            t = lab.run("sysv_ipc_stash", KEY=key, MB=mb)
            log = t.evaluation.log
            assert t.evaluation.status.value == "PASSED", log[-1500:]
            assert "denied: shmget" in log and "denied: mq_open" in log, log[-1500:]
            assert "LEFT" not in log and "FOUND STASH" not in log, log[-1500:]
        assert not _sysv_segment(key), _sysv_segment(key)
        assert not _mq_exists(key)
    finally:
        _remove_ipc_leftovers(key)


def _peek(lab: Lab):
    """Run `peek_witness_inputs`: it saw nothing outside its scratch and PASSED (its answers are right)."""
    ev = lab.run("peek_witness_inputs").evaluation
    report = next((x for x in ev.log.splitlines() if "SNOOP REPORT" in x), "")
    assert report and "BREACH" not in report, ev.log[-2000:]
    assert ev.status.value == "PASSED", ev.log[-2000:]
    return ev


def test_peeking_at_the_witness_inputs_before_they_are_handed_over(lab: Lab, unchanged) -> None:
    """The reference runner makes the witness's inputs in its own scratch before the supervisor
    copies them into the solution's: the solution must not see them there (nor through /proc)."""
    ev = _peek(lab)
    w = (ev.correctness.extra or {}).get("witness") or {}
    assert w.get("calls", 0) >= 1, ev.correctness.extra  # it was witnessed while it looked
    unchanged()


def test_a_worker_directory_the_runners_may_read_keeps_scratch_apart(tmp_path: Path) -> None:
    """A worker directory inside the artifact cache (which runners read) and runners without a
    mount namespace (as on a GPU): the runners' scratch must still be out of each other's sight,
    the reference runner's witness inputs among them."""
    from flashinfer_bench.bench.client import shutdown_worker

    from .conftest import Lab

    lab = Lab(tmp_path)
    lab.worker_dir = lab.cache / "workers"
    lab.secret = lab.worker_dir / "supervisor-secret.txt"
    lab.config = lab.config.model_copy(update={"worker_dir": str(lab.worker_dir)})
    lab.start(env={"FIB_SANDBOX_RO_MOUNTS": "0"})
    try:
        _peek(lab)
        assert not list(lab.worker_dir.rglob("runner-*")), "runners' scratch inside the readable cache"
    finally:
        shutdown_worker("cpu", lab.config)
        lab.cleanup()


WITNESSED_SWITCH = '''
import sys as _sys


def _witnessed():
    f = _sys._getframe(1)
    while f is not None:
        if "witness" in f.f_code.co_filename.rsplit("/", 1)[-1]:
            return True
        f = f.f_back
    return False


_honest_run = run


def run(probs, top_k, top_p):
    out = _honest_run(probs, top_k, top_p)
    # inside the witness's calls: the least likely token, outside every filtered support
    return probs.argmin(dim=-1).to(out.dtype) if _witnessed() else out
'''


def test_a_sampler_wrong_only_when_witnessed_is_caught(lab: Lab) -> None:
    """A sampling check compares no reference output: it derives each row's filtered support from
    the inputs (the sort a top-p filter needs is most of its cost), which the witness now makes
    while the solution is evaluated, for the calls it may check. A sampler that draws right in its
    own process's checks and returns tokens outside the support in the witness's calls must still
    fail there (`witness_wrong`), and the honest example sampler must pass."""
    from flashinfer_bench.bench.loader import _shim_build
    from flashinfer_bench.data import Definition, Solution, Workload

    repo = Path(__file__).resolve().parents[2]
    d = Definition.model_validate_json((repo / "dataset/definitions/sampling/top_k_top_p_sampling_from_probs_v32000.json").read_text())
    honest = Solution.model_validate_json(next((repo / "dataset/solutions/example/sampling").rglob("*.json")).read_text())
    src = honest.sources[0].content + WITNESSED_SWITCH
    hostile = honest.model_copy(update={"name": "sampler_wrong_when_witnessed",
                                        "sources": [honest.sources[0].model_copy(update={"content": src})]})
    wl = Workload(axes={"batch_size": 4}, inputs={"probs": {"type": "random"}, "top_k": {"type": "random"},
                                                     "top_p": {"type": "random"}}, uuid="sampling_witnessed_b4")
    for sol, want in ((honest, "PASSED"), (hostile, "INCORRECT_NUMERICAL")):
        t = evaluate_via_worker(d, sol, wl, _shim_build(sol, lab.cache), lab.config, dataset_root=repo / "dataset")
        ev = t.evaluation
        assert ev.status.value == want, (sol.name, ev.status, ev.log[-2000:])
        if want != "PASSED":
            assert "witness_wrong" in ev.log, ev.log[-2000:]


def test_a_parked_runner_holds_no_lease_on_the_dataset(lab: Lab, unchanged) -> None:
    """A read lease needs only a read-only descriptor of a file its user owns, and a runner's user
    owns the dataset: while a parked runner held leases (`lease_dataset_files`, a helper's red team,
    session 23), a trusted process opening the workloads file to append waited 46 s (the kernel's
    lease-break time). seccomp now refuses F_SETLEASE and F_NOTIFY."""
    t = lab.run("lease_dataset_files")
    assert t.evaluation.status.value == "PASSED", t.evaluation.log[-1500:]
    assert "read leases held on 0 files" in t.evaluation.log, t.evaluation.log[-1500:]
    assert "lease: Operation not permitted" in t.evaluation.log, t.evaluation.log[-1500:]
    jsonl = sorted(Path(lab.dataset).rglob("*.jsonl"))
    assert jsonl
    for path in jsonl:  # the runner is parked now; with a lease held this open fails (EWOULDBLOCK)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
        os.close(fd)
    unchanged()
    _assert_next_is_fine(lab)


def test_a_parked_runner_leaves_its_users_counts_to_others(lab: Lab) -> None:
    """What the kernel counts per user is shared with the host's processes of that user: a parked
    runner (`user_quota_parked`, session 23) held all 128 inotify instances (EMFILE for everyone
    else), queued 96291 real-time signals (timer_create failed with EAGAIN outside the sandbox)
    and grew pipes to 1 MiB until new pipes of unprivileged processes got one page. Now inotify
    and F_SETPIPE_SZ are refused and a runner may queue 1024 signals."""
    import ctypes

    t = lab.run("user_quota_parked")
    log = t.evaluation.log
    assert t.evaluation.status.value == "PASSED", log[-1500:]
    assert "inotify instances 0 (Operation not permitted)" in log and "1 MiB pipes 0 (Operation not permitted)" in log, log[-1500:]
    queued = int(re.search(r"queued RT signals (\d+)", log).group(1))
    assert queued <= 1024, log[-1500:]
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(0)  # the runner is parked now: this process still gets an instance
    assert fd >= 0, os.strerror(ctypes.get_errno())
    os.close(fd)
    timer = ctypes.c_void_p()
    assert libc.timer_create(1, None, ctypes.byref(timer)) == 0, os.strerror(ctypes.get_errno())  # CLOCK_MONOTONIC
    libc.timer_delete(timer)
    _assert_next_is_fine(lab)


def test_a_torch_mode_left_active_fails_the_evaluation(lab: Lab) -> None:
    """A TorchFunctionMode entered and never left intercepts every torch call the harness makes
    after the solution's: `mode_disarm_checks` made the runner's comparisons say "equal", so
    outputs never written passed its trials (session 23; only the witness caught it). No function
    is replaced, so the guard now counts the torch mode stacks like a trace hook."""
    t = lab.run("mode_disarm_checks")
    assert t.evaluation.status.value == "RUNTIME_ERROR", t.evaluation.log[-1500:]
    assert "timer_patched" in t.evaluation.log and "torch function mode stack" in t.evaluation.log, t.evaluation.log[-1500:]
    _assert_next_is_fine(lab)


def test_an_audit_hook_is_refused(lab: Lab) -> None:
    """An audit hook cannot be removed and runs inside the harness at every audited event:
    `audit_hook_result` divided the result's latency inside the guard's last /proc read, before
    the sealer signed it (session 23; the witness caught the forged number). The runner's own
    hook, added before any solution, now refuses it, and the try fails the evaluation."""
    t = lab.run("audit_hook_result")
    assert t.evaluation.status.value == "RUNTIME_ERROR", t.evaluation.log[-1500:]
    assert "timer_patched" in t.evaluation.log and "sys.addaudithook" in t.evaluation.log, t.evaluation.log[-1500:]
    _assert_next_is_fine(lab)


MODE_INSIDE_ITS_CALL = '''
import torch
from torch.overrides import TorchFunctionMode


class _Count(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def run(x, weight, eps):
    with _Count():  # entered and left within the call: the harness never runs under it
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
'''


def test_a_torch_mode_used_inside_a_call_is_fine(lab: Lab) -> None:
    sol = make_solution("mode_inside_its_call", MODE_INSIDE_ITS_CALL, lab.definition)
    ev = evaluate_via_worker(lab.definition, sol, rms_workload(16), _shim_build(sol, lab.cache), lab.config,
                             dataset_root=lab.dataset).evaluation
    assert ev.status.value == "PASSED", ev.log[-1500:]
    assert "timer_patched" not in ev.log and "torch_patched" not in ev.log, ev.log[-1500:]



@pytest.mark.parametrize("attack,why", [("reply_field_types", "extra is a list"),
                                        ("reply_failed_field_types", "correctness is a list")])
def test_a_sealed_result_of_the_wrong_shape_costs_only_its_trace(lab: Lab, attack: str, why: str) -> None:
    """A runner that rewrites `json.dumps` seals any body: `extra` a list in a PASSED reply, or
    `correctness` a list in a failed one, raised in the worker outside every handler (session 23:
    the job ended unjudged, "the worker died during the evaluation", and the client asked again).
    Every field the supervisor reads is now checked for its type first."""
    t = lab.run(attack)
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log[-1500:]
    assert "implausible result from the runner" in ev.log and why in ev.log, ev.log[-1500:]
    _assert_next_is_fine(lab)


def test_a_runner_cannot_turn_off_its_reaper(lab: Lab) -> None:
    """A runner is its orphans' reaper (a CUDA runner has no pid namespace): a solution that
    turned that off and double-forked would leave its daemon to init, out of every walk of the
    runner's tree (the build-time form, `build_unreaped_daemon`, did; session 23). seccomp refuses
    PR_SET_CHILD_SUBREAPER (the daemon's pid is the runner's pid namespace's on a CPU, where its
    orphans go to the namespace's init anyway: the refusal is what this machine can show)."""
    t = lab.run("runner_unset_reaper")
    log = t.evaluation.log
    assert "UNSET REAPER REPORT prctl = -1 errno 1" in log, log[-1500:]
    _assert_next_is_fine(lab)


@pytest.mark.parametrize("attack", ["witness_midround_patch", "witness_midround_helpers",
                                    "witness_midround_thread_repatch"])
def test_the_witness_cannot_be_replaced_between_its_rounds(lab: Lab, attack: str) -> None:
    """The guard looks after the load and after the evaluation; the witness's rounds run the
    solution again. A solution that swapped `witness.run` (or its chain, save and call helpers)
    during its first witnessed call had a lean handler of its own answer every later round, its
    calls honest and its harness share far under the null's: PASSED at 9-12x (session 23, a
    helper's red team). The runner now dispatches to the handlers it took before any solution,
    a round calls the helpers it took when it began and checks their code after every call, and
    anything replaced when a round ends fails it."""
    t = lab.run(attack, COST=1)
    ev = t.evaluation
    assert ev.status.value != "PASSED", ev.log[-1500:]
    assert "timer_patched" in ev.log, ev.log[-1500:]
    _assert_next_is_fine(lab)


@pytest.mark.parametrize("attack", ["reused_output_buffer", "output_per_input_address"])
def test_a_solution_that_reuses_its_output_buffer_is_witnessed_right(lab: Lab, attack: str) -> None:
    """Honest solutions that return one static output buffer (a CUDA-graph or workspace
    pattern), or one per input address: the witness kept every call's outputs until its save,
    so every kept row showed the last call's values, and they were witness_wrong (8 of 8 checked
    calls, session 23). A CPU round now copies a call's outputs as it returns."""
    t = lab.run(attack, COST=1)
    assert t.evaluation.status.value == "PASSED", t.evaluation.log[-1500:]


def _page_tables_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("PageTables:"):
            return int(line.split()[1]) / 2**20
    return 0.0


def test_page_tables_count_against_the_memory_limit(lab: Lab) -> None:
    """`page_table_hoard` (red team 6): a read-only mapping of 1.5 TiB with one byte read every 2 MiB
    makes 3 GiB of page tables (kernel memory) while its resident set stays ~180 MiB: no part of the
    memory watch counted them (resident set, tmpfs scratch, shared memory by descriptors), so it
    PASSED over the lab's 2 GiB limit and its parked runner held them through the next
    evaluations. Page tables now count, in the watch and in the parked runners' cap."""
    before = _page_tables_gib()
    t = lab.run("page_table_hoard")
    ev = t.evaluation
    assert ev.status.value != "PASSED" and "page tables" in ev.log, (ev.status, ev.log[-1500:])
    deadline = time.monotonic() + 10.0  # the killed runner's 3 GiB of tables are freed as it is torn down
    while _page_tables_gib() >= before + 0.5 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _page_tables_gib() < before + 0.5, "the runner's page tables outlived it"
    _assert_next_is_fine(lab)


def test_a_solution_that_sets_the_default_device_is_witnessed_right(lab: Lab) -> None:
    """`torch.set_default_device` leaves a torch function mode (DeviceContext) active in the
    solution's runner, and every torch operation of the witness's round there (mapping the inputs,
    copying the outputs, saving them) went through its Python handler, none of the null's: an
    honest 16 us RMSNorm was witnessed at 61.7 us and disputed (session 23). The harness's own
    operations in a round now run with torch function modes off; the solution's call keeps them."""
    for _ in range(2):  # a second evaluation in the same runner: the mode is still active there
        t = lab.run("default_device_set")
        assert t.evaluation.status.value == "PASSED", t.evaluation.log[-1500:]


# ------------------------------------------------------------------------------------------------
# Red team, session 24 (a helper's): what survives a stop, what the host's user shares, locks a
# runner may take, its own log, what parked runners hold together, and builds beside measurements.
# Each test states what the defence SHOULD give; those whose hole is open fail until it is closed.


def _busy_cpus(window_s: float = 0.25) -> float:
    """How many of the machine's CPUs were busy over `window_s` (from /proc/stat)."""
    def read() -> tuple:
        f = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        return sum(f), f[3] + f[4]  # total, idle + iowait

    t0, i0 = read()
    time.sleep(window_s)
    t1, i1 = read()
    return (os.cpu_count() or 1) * (1 - (i1 - i0) / max(1, t1 - t0))


def _rss_bytes(pid: int) -> int:
    try:
        line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmRSS"))
    except (OSError, StopIteration):
        return 0
    return int(line.split()[1]) * 1024


def _allocated_bytes(folder: Path) -> int:
    total = 0
    for p in folder.rglob("*"):
        try:
            total += p.lstat().st_blocks * 512
        except OSError:
            continue
    return total


def test_a_stopped_runner_does_no_work_in_the_kernel(tmp_path: Path, monkeypatch) -> None:
    """`stopped_kernel_burner`: a SIGSTOP takes effect when a thread returns to user space, and
    `madvise(MADV_POPULATE_READ)` over 64 GiB of zero-page mappings runs ~9 s in the kernel checking
    only for fatal signals; `stop_tree` judges a process by its leader's state (T). Started right
    after the supervisor's reading of its last witness round, three such threads keep both cores
    busy for ~15 s while its runner is "stopped", beside the next reference timing and the next
    evaluations. SHOULD: a stopped runner uses no CPU (one whose thread keeps running after the
    stop is killed, which ends the call, and its trace flagged); the reference timed after it
    keeps its time."""
    monkeypatch.setenv("FIB_MEASURE_LOCK_DIR", str(tmp_path / "locks"))
    lab = Lab(tmp_path)
    lab.start()
    try:
        ref0 = lab.run_good(rms_workload(4096, uuid="kernel_burner_ref_0")).evaluation.performance.reference_latency_ms
        t = lab.run("stopped_kernel_burner", workload=rms_workload(16, uuid="kernel_burner_own"), COST=100)
        pids = _runners_of(lab.worker_dir)
        c0 = sum(_cpu_s(p) for p in pids)
        time.sleep(1.0)
        burnt = sum(_cpu_s(p) for p in pids) - c0
        after = lab.run_good(rms_workload(4096, uuid="kernel_burner_ref_1")).evaluation
        print("KERNEL BURNER", t.evaluation.status.value, sorted(flags(t)), f"stopped runners used {burnt:.2f} CPU s "
              f"in 1 s; reference {ref0} -> {after.performance.reference_latency_ms} ms, honest after "
              f"{after.performance.latency_ms} ms")
        assert burnt < 0.1, f"the worker's stopped runners used {burnt:.2f} CPU s in the second after the evaluation"
        if t.evaluation.status.value == "PASSED":
            assert "background_work" in flags(t), t.evaluation.correctness.extra
    finally:
        shutdown_worker("cpu", lab.config)


def _unprivileged_probe() -> str:
    """A process of this user without capabilities and with the usual 1024 descriptors: the size of
    a new pipe of its, and whether it may pass a descriptor (SCM_RIGHTS), e.g. "65536 ok"."""
    import subprocess
    import sys

    code = ("import fcntl, os, resource, socket\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))\n"
            "r, w = os.pipe()\n"
            "a, b = socket.socketpair()\n"
            "try:\n    socket.send_fds(a, [b'x'], [r]); ok = 'ok'\n"
            "except OSError as e:\n    ok = e.strerror\n"
            "print(fcntl.fcntl(w, 1032), ok)\n")
    cmd = [sys.executable, "-c", code]
    if os.geteuid() == 0:  # root keeps CAP_SYS_RESOURCE, which exempts it from both counts
        cmd = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()


def test_a_parked_runner_leaves_the_users_pipes_and_descriptors_in_flight(tmp_path: Path, monkeypatch) -> None:
    """`pipe_pages_parked`: ~1200 pipes parked in flight in a socketpair of its own (SCM_RIGHTS,
    never received: no process's descriptor table holds them) plus those in its table, ~2000
    default pipes, twice the user's `pipe-user-pages-soft`, and the whole of the user's in-flight
    allowance (`unix_inflight`, bounded by the sender's 1024 descriptors). While it is parked a
    process of the user without CAP_SYS_RESOURCE gets 8 KiB pipes and cannot pass a descriptor
    (ETOOMANYREFS): a worker run by an ordinary user hands every evaluation its log that way
    (`worker._hand_log`). SHOULD: the probe gets 64 KiB pipes and passes descriptors. Now
    socketpair() is refused in a runner, and a runner parked with bytes in its supervisor
    connection (descriptors it sent there) is discarded."""
    import shutil as _shutil

    if os.geteuid() == 0 and not _shutil.which("setpriv"):
        pytest.skip("no setpriv to drop the capabilities of the probe")
    before = _unprivileged_probe()
    if before != "65536 ok":
        pytest.skip(f"the user is over its pipe or in-flight counts already: {before!r}")
    monkeypatch.setenv("FIB_MEASURE_LOCK_DIR", str(tmp_path / "locks"))
    lab = Lab(tmp_path)
    lab.start()
    try:
        t = lab.run("pipe_pages_parked")
        report = t.evaluation.status.value + " " + (_report(t.evaluation.log, "PIPE PAGES REPORT")
                                                    if "PIPE PAGES REPORT" in t.evaluation.log else t.evaluation.log[-300:])
        during = _unprivileged_probe()  # the runner is stopped now, holding what it took
        print("PIPES", report, "| an unprivileged process while it is parked:", during, "| before:", before)
        assert during == "65536 ok", (during, report)
    finally:
        shutdown_worker("cpu", lab.config)
    assert _unprivileged_probe() == "65536 ok"  # gone with its runner


def test_a_parked_runner_holds_no_build_lock(lab: Lab) -> None:
    """`flock_cache_locks`: a read-only descriptor may take an exclusive flock, and the artifact
    cache every runner reads keeps `locks/<hash>.lock` of every hash built (filelock leaves it);
    `compile.build` waits up to 3 h (`LOCK_TIMEOUT_S`) for it before it builds that hash again (a
    failed or removed build, another solution of equal content). SHOULD: while the runner is
    parked a builder takes the lock of an existing hash at once."""
    from filelock import FileLock, Timeout

    from flashinfer_bench.compile.cache import ArtifactCache

    cache = ArtifactCache(lab.cache)
    digest = "f1" * 32
    with cache.lock(digest, 5):  # a build of this hash ran once: its lock file stays
        pass
    t = lab.run("flock_cache_locks")
    assert t.evaluation.status.value == "PASSED", t.evaluation.log[-1500:]
    report = _report(t.evaluation.log, "FLOCK CACHE REPORT")
    lock = FileLock(str(cache.lock_path(digest)), timeout=2)
    try:
        lock.acquire()
        lock.release()
        stalled = False
    except Timeout:
        stalled = True
    print("FLOCK", report, "| a builder of that hash stalled:", stalled)
    assert not stalled, report
    _assert_next_is_fine(lab)


def test_a_runners_own_log_does_not_outlive_it(lab: Lab) -> None:
    """`runner_log_fill`: a runner holds its own `runner-<n>-<random>.log` (its stdout and stderr)
    open for writing and nothing removes it, not when the runner is replaced or its worker exits;
    it may grow to the file-size limit (1 GiB by default, 16 MiB in this lab) of real blocks on the
    worker's disk, per solution. SHOULD: two such solutions grow the logs folder by a few MiB at
    most."""
    logs = Path(lab.targets()["logs_dir"])
    before = _allocated_bytes(logs)
    src = (ATTACKS / "runner_log_fill.py").read_text()
    reports = []
    for i in range(2):  # two solutions: two runners
        sol = make_solution(f"attack_runner_log_fill_{i}", src + f"\n# solution {i}\n", lab.definition)
        ev = evaluate_via_worker(lab.definition, sol, rms_workload(16), _shim_build(sol, lab.cache), lab.config,
                                 dataset_root=lab.dataset).evaluation
        assert ev.status.value == "PASSED", ev.log[-1500:]
        reports.append(_report(ev.log, "LOG FILL REPORT"))
    grown = _allocated_bytes(logs) - before
    print("LOG FILL", reports, f"the logs folder grew by {grown / 2**20:.1f} MiB")
    assert grown < 8 << 20, (grown, reports)
    _assert_next_is_fine(lab)


def test_parked_runners_together_hold_at_most_one_runners_memory(tmp_path: Path, monkeypatch) -> None:
    """`parked_memory_pool` as three solutions: each holds 0.6 of its runner's memory limit
    (FIB_SANDBOX_HOST_MEM_GB, by default half the machine) and is parked with it; the pool keeps up
    to 6 runners on a CPU (3 on a GPU) and nothing adds up what they hold: six such solutions hold
    3.6x a runner's limit, 1.8x the machine's memory by default. SHOULD: the stopped runners of a
    worker hold together at most one runner's limit."""
    from .conftest import LIMITS

    monkeypatch.setenv("FIB_MEASURE_LOCK_DIR", str(tmp_path / "locks"))
    lab = Lab(tmp_path)
    lab.start()
    try:
        src = (ATTACKS / "parked_memory_pool.py").read_text()
        reports = []
        for i in range(3):
            sol = make_solution(f"attack_parked_memory_pool_{i}", src + f"\n# solution {i}\n", lab.definition)
            ev = evaluate_via_worker(lab.definition, sol, rms_workload(16), _shim_build(sol, lab.cache), lab.config,
                                     dataset_root=lab.dataset).evaluation
            reports.append(ev.status.value + " " + _report(ev.log, "PARKED MEMORY REPORT"))
        held = sum(_rss_bytes(p) for p in _stopped_runners(lab.worker_dir))
        cap = float(LIMITS["FIB_SANDBOX_HOST_MEM_GB"]) * 2**30
        print("PARKED MEMORY", reports, f"the stopped runners hold {held / 2**30:.2f} GiB, one runner's limit "
              f"{cap / 2**30:.2f} GiB")
        assert held <= cap, (held, reports)
    finally:
        shutdown_worker("cpu", lab.config)


def test_a_page_cache_thrash_moves_no_number(lab: Lab) -> None:
    """`page_cache_evict` drops the page cache of the dataset, the artifact cache and the Python tree
    (posix_fadvise DONTNEED on read-only descriptors) and keeps doing it while its runner runs.
    Nothing timed reads files: contained, and the next evaluation runs normally."""
    t = lab.run("page_cache_evict")
    assert t.evaluation.status.value == "PASSED", t.evaluation.log[-1500:]
    assert "dropped the pages of" in _report(t.evaluation.log, "PAGE CACHE REPORT"), t.evaluation.log[-1500:]
    _assert_next_is_fine(lab)


def test_a_build_does_not_run_beside_a_measurement(lab: Lab, tmp_path: Path) -> None:
    """`build_cpu_burner`: compile jobs run beside benchmark jobs (only the latter hold the
    `cpu_worker` resource and the measurement lock) and a build runs solution code at import, with
    no CPU limit or priority of its own: four processes copying 64 MiB buffers for 15 s share the
    cores, the cache and the memory bus with the honest solution and the reference measured
    meanwhile (on a CPU both are wall time). SHOULD: the build's code does not run while an
    evaluation measures, or runs at idle priority (SCHED_IDLE or nice 19)."""
    from flashinfer_bench.compile import build

    sol = lab.solution("build_cpu_burner", PROCS=4, SECONDS=15)
    out: List[object] = []
    ref0 = lab.run_good(rms_workload(4096, uuid="build_burner_ref_0")).evaluation.performance
    th = threading.Thread(target=lambda: out.append(build(sol, lab.definition, tmp_path / "cache")), daemon=True)
    th.start()
    end = time.monotonic() + 60
    while time.monotonic() < end and _busy_cpus() < 1.6:  # the build's processes are burning
        pass
    t0 = time.monotonic()
    during = lab.run_good(rms_workload(4096, uuid="build_burner_ref_1")).evaluation
    t1 = time.monotonic()
    th.join(180)
    assert out, "the build did not end"
    r = out[0]
    report = next((x for x in (r.log or "").splitlines() if "BUILD BURNER REPORT" in x), "")
    m = re.search(r"from ([\d.]+) to ([\d.]+) .* policy (\w+) nice (-?\d+)", report)
    assert m, (r.status, (r.log or "")[-2000:])
    start, stop, policy, nice = float(m.group(1)), float(m.group(2)), m.group(3), int(m.group(4))
    overlap = min(t1, stop) - max(t0, start)
    print("BUILD BURNER", report, f"| evaluation {t0:.3f}-{t1:.3f}, overlap {overlap:.1f} s; reference "
          f"{ref0.reference_latency_ms} -> {during.performance.reference_latency_ms} ms, honest "
          f"{ref0.latency_ms} -> {during.performance.latency_ms} ms")
    assert overlap <= 0 or policy == "SCHED_IDLE" or nice >= 19, report


def test_a_build_gets_a_runners_task_limit(lab: Lab, tmp_path: Path) -> None:
    """`build_task_flood`: a build child has no pids cgroup, no RLIMIT_NPROC (it binds no uid 0
    anyway) and no pid namespace: it may start tasks until the machine's pid_max and hold them
    until the build timeout (900 s), and no process of the machine could fork meanwhile. Bounded
    here at 1500 threads. SHOULD: refused past about a runner's limit (FIB_SANDBOX_NPROC + 64)."""
    from flashinfer_bench.compile import build
    from flashinfer_bench.sandbox.policy import Settings

    sol = lab.solution("build_task_flood", N=1500)
    r = build(sol, lab.definition, tmp_path / "cache")
    report = next((x for x in (r.log or "").splitlines() if "BUILD TASK FLOOD REPORT" in x), "")
    m = re.search(r"started (\d+) of", report)
    assert m, (r.status, (r.log or "")[-2000:])
    limit = Settings.from_env().nproc_extra + 64 + 2 * (os.cpu_count() or 16)
    print("TASK FLOOD", report, f"| a runner's limit here: {limit}")
    assert int(m.group(1)) <= limit, report
