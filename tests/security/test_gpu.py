"""The sandbox on a GPU: CUDA works confined, the GPU memory fraction holds, background kernels
are flagged, and the dataset and project stay unchanged (run with `pytest -m gpu tests/security`)."""
from __future__ import annotations

import os
import re

from pathlib import Path
from typing import Iterator

import pytest

from flashinfer_bench.bench.client import shutdown_worker

from .conftest import Lab, env_vars, flags

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    lab = Lab(tmp_path_factory.mktemp("security_gpu"))
    lab.config = lab.config.model_copy(update={"device": "cuda:0", "max_time_s": 0.1})
    lab.start()
    # the GPU attacks that rewrite the witness's runner side or a function's code (late_outputs,
    # gpu_queue_after_reply) are for the witness and the quiet-device gate beneath the guard,
    # which would stop them first (the guard's layer is device-agnostic: tests/security/test_in_runner.py)
    with env_vars({"FIB_SANDBOX_GUARD_WITNESS": "off"}):
        yield lab
    shutdown_worker("cuda:0", lab.config)
    lab.cleanup()


def test_cuda_works_confined(gpu_lab: Lab) -> None:
    t = gpu_lab.run_good()
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log
    sandbox = ev.environment.model_dump().get("sandbox", "")
    assert "landlock" in sandbox and "seccomp" in sandbox and "netns" in sandbox, sandbox
    assert ev.performance.latency_ms > 0


def test_quiet_writes_are_denied_on_the_gpu_machine(gpu_lab: Lab, unchanged) -> None:
    t = gpu_lab.run("write_quietly")
    assert t.evaluation.status.value == "PASSED", t.evaluation.log
    assert "BREACH" not in t.evaluation.log


def test_gpu_memory_fraction(gpu_lab: Lab) -> None:
    t = gpu_lab.run("gpu_grab_memory")
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log[:3000]
    assert "out of memory" in ev.log.lower(), ev.log[:3000]
    assert gpu_lab.run_good().evaluation.status.value == "PASSED"


def test_background_kernels_are_flagged(gpu_lab: Lab) -> None:
    t = gpu_lab.run("gpu_background_kernels")
    ev = t.evaluation
    if ev.status.value == "PASSED":
        assert "background_work" in flags(t), ev.correctness.extra
    else:
        assert ev.status.value in ("INCORRECT_NUMERICAL", "RUNTIME_ERROR"), ev.log[:3000]
    assert gpu_lab.run_good().evaluation.status.value == "PASSED"


def test_gpu_work_queued_after_the_last_reply_does_not_slow_the_next_solution(gpu_lab: Lab) -> None:
    """`gpu_queue_after_reply` queues ~1.5 s of a spin kernel after each reply its runner sends;
    stopping the runner does not stop the GPU. The supervisor probes the device after the stop,
    kills the runner (its context's queue goes with it) and marks the trace `background_work`:
    the honest solution measured next keeps its latency (with `FIB_QUIET_GATE=off` in the worker's
    environment it waits for the spin's time slices)."""
    from tests.bench.conftest import rms_workload

    wl = rms_workload(8192, uuid="rms_gpu_quiet")
    before = [gpu_lab.run_good(wl) for _ in range(3)]
    lat = [t.evaluation.performance.latency_ms for t in before]
    probes = [(t.evaluation.correctness.extra or {}).get("quiet_probe_us") for t in before]
    t = gpu_lab.run("gpu_queue_after_reply", workload=wl, SPIN_S=1.5)
    ev = t.evaluation
    after = gpu_lab.run_good(wl)
    aev = after.evaluation
    hx = (ev.correctness.extra or {}) if ev.correctness else {}
    print("GPU QUIET hostile's probe", hx.get("quiet_probe_us"), "witness", {k: (hx.get("witness") or {}).get(k) for k in ("clock", "parts_ms", "seconds")},
          "log", ev.log[-600:])
    print("GPU QUIET", "honest before", lat, "probes", probes, "| hostile", ev.status.value, sorted(flags(t)),
          "| honest after", aev.status.value, aev.performance and aev.performance.latency_ms,
          (aev.correctness.extra or {}).get("quiet_probe_us") if aev.correctness else None)
    if ev.status.value == "PASSED":
        assert "background_work" in flags(t), ev.correctness.extra
    assert aev.status.value == "PASSED", aev.log[:3000]
    assert aev.performance.latency_ms <= 1.25 * max(lat) + 0.002, (lat, aev.performance.latency_ms)


def test_forged_frames_on_the_gpu(gpu_lab: Lab) -> None:
    t = gpu_lab.run("forge_result")
    assert t.evaluation.status.value != "PASSED", t.evaluation.log[:3000]
    assert gpu_lab.run_good().evaluation.status.value == "PASSED"


def test_scratch_only(gpu_lab: Lab, tmp_path: Path, unchanged) -> None:
    t = gpu_lab.run("write_passed_trace")
    assert t.evaluation.status.value == "RUNTIME_ERROR", t.evaluation.log[:3000]


def test_an_honest_solution_is_witnessed_without_dispute_on_the_gpu(gpu_lab: Lab) -> None:
    """The supervisor's witness on a GPU (wall time, not measured there yet): an honest solution
    must keep PASSED without a timing dispute (a dispute fails the trace)."""
    for _ in range(3):
        t = gpu_lab.run_good()
        ev = t.evaluation
        assert ev.status.value == "PASSED", ev.log[:3000]
        assert "timing_disputed" not in flags(t), ev.correctness.extra
        w = (ev.correctness.extra or {}).get("witness")
        assert w and w["bad_calls"] == 0, ev.correctness.extra
        print("GPU WITNESS", w, "latency_ms", ev.performance.latency_ms, "host_ms", ev.correctness.extra.get("host_ms"))


def test_understated_error_figures_on_the_gpu(gpu_lab: Lab) -> None:
    """A solution 0.4% off that writes its recorded error figures down to 0: the trace shows
    those the witness measured in the reference runner."""
    t = gpu_lab.run("forge_error_numbers", COST=1)
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log[:3000]
    print("GPU ERRORS", ev.correctness.max_absolute_error, ev.correctness.max_relative_error,
          ev.correctness.extra.get("runner_correctness"))
    assert ev.correctness.max_relative_error > 0.002
    assert ev.correctness.extra["runner_correctness"] == {"max_abs": 0.0, "max_rel": 0.0}


@pytest.mark.parametrize("name", ["sealer_wrap", "rewrite_stats", "gc_sampler_swap", "inflate_reference"])
def test_rewriting_the_harness_on_the_gpu(gpu_lab: Lab, name: str) -> None:
    """Forged numbers from inside a CUDA runner. The reference time is always the supervisor's.
    Each runs ~4.5 ms of work a call and claims 0.07-0.1 ms: the device-time round disputes it and
    the dispute fails the trace (it was only flagged, PASSED with the forged latency, until session
    16); the forged reference time is replaced by the supervisor's."""
    from tests.bench.conftest import rms_workload

    t = gpu_lab.run(name, workload=rms_workload(4096, uuid="rms_gpu_witness"), COST=200)
    ev = t.evaluation
    extra = (ev.correctness.extra or {}) if ev.correctness else {}
    print("GPU", name, ev.status.value, ev.performance, sorted(flags(t)), extra.get("witness"), extra.get("host_ms"))
    if name == "inflate_reference":
        assert "reference_tampered" in flags(t) or ev.status.value != "PASSED", ev.log[:3000]
    else:  # a RUNTIME_ERROR trace holds no correctness record: the verdict and its numbers are in the log
        assert ev.status.value == "RUNTIME_ERROR" and "timing_disputed" in ev.log, (ev.status, ev.log[-2000:])
    assert gpu_lab.run_good().evaluation.status.value == "PASSED"


def test_a_solution_wrong_only_when_witnessed_on_the_gpu(gpu_lab: Lab) -> None:
    """Right in its own process's checks, wrong in the witness's calls: the GPU witness checks a
    round in one pass and then names the wrong calls one by one."""
    t = gpu_lab.run("wrong_when_witnessed")
    ev = t.evaluation
    assert ev.status.value == "INCORRECT_NUMERICAL", ev.log[:3000]
    # which calls are checked is drawn after they return: any of them may be the one named
    assert "witness_wrong" in ev.log and re.search(r"call \d+: output 'out'", ev.log), ev.log[:3000]
    assert gpu_lab.run_good().evaluation.status.value == "PASSED"


def test_the_witness_inputs_a_solution_is_handed_cannot_be_spoiled(gpu_lab: Lab) -> None:
    """On a GPU the witness hands the inputs over as a hard link to the reference runner's file
    (no copy), which the null call measuring the harness's share reads again: the solution can
    neither make it writable nor change or truncate it, so a forged latency cannot turn the null
    call into a failure and its dispute into `witness_unresolved`."""
    from tests.bench.conftest import rms_workload

    t = gpu_lab.run("tamper_witness_inputs", workload=rms_workload(4096, uuid="rms_gpu_tamper"), COST=200)
    ev = t.evaluation
    extra = (ev.correctness.extra or {}) if ev.correctness else {}
    print("GPU tamper", ev.status.value, sorted(flags(t)), extra.get("witness"))
    w = extra.get("witness") or {}
    # its prints in the witness's calls go to the runner's own log: what shows the spoiling failed
    # is that the null call still measured the harness's share and the forged claim is disputed
    # the null was measured (else `witness_unresolved`, not a dispute) and the forged claim disputed
    assert ev.status.value == "RUNTIME_ERROR" and "timing_disputed" in ev.log, (sorted(flags(t)), w, ev.log[-2000:])
    assert "witness_unresolved" not in ev.log, ev.log[-2000:]
    assert gpu_lab.run_good().evaluation.status.value == "PASSED"


def test_metadata_and_proc_on_the_gpu_machine(gpu_lab: Lab, unchanged) -> None:
    """A file's mode, owner, times and extended attributes cannot change (seccomp, on every device;
    CUDA runners have no read-only mount namespace: it broke CUDA init on the H200), by path or by
    descriptor; the host's processes are out of sight (/proc narrowed to system entries and the
    runner's own)."""
    for attack, tries in (("metadata_outside", 12), ("metadata_by_fd", 21)):
        t = gpu_lab.run(attack)
        log = t.evaluation.log
        report = next((x for x in log.splitlines() if "METADATA REPORT" in x), "")
        assert report and "BREACH" not in report and report.count("denied:") == tries, log[-2000:]
        print("GPU METADATA", attack, report[:200])
    p = gpu_lab.run("proc_snoop")
    assert gpu_lab.marker not in p.model_dump_json()
    assert "found: []" in p.evaluation.log or "denied: /proc" in p.evaluation.log, p.evaluation.log[-2000:]


def test_code_on_the_drivers_threads_stays_confined(gpu_lab: Lab, unchanged) -> None:
    """A host function enqueued with cudaLaunchHostFunc runs on a thread of the CUDA driver, which
    may predate the runner's Landlock rules (applied after CUDA init; all threads only with
    Linux 7.0's LANDLOCK_RESTRICT_SELF_TSYNC): its writes outside scratch must fail too."""
    t = gpu_lab.run("gpu_host_callback_write")
    log = t.evaluation.log
    report = next((x for x in log.splitlines() if "CALLBACK REPORT" in x), "")
    print("GPU CALLBACK", report[:400], "| landlock:", (t.evaluation.environment.model_dump().get("sandbox", "")))
    assert report and "callback did not run" not in report, log[-2000:]
    assert "BREACH" not in report, report
    assert not gpu_lab.breaches()


def test_the_gpus_settings_cannot_be_changed_from_a_runner(gpu_lab: Lab) -> None:
    """Clocks, power limit, compute and persistence mode are the machine's: a runner that could set
    them would slow every solution measured after it. NVML must refuse every one (the runner holds
    no capability), and the honest solution after it keeps PASSED."""
    t = gpu_lab.run("gpu_set_clocks")
    log = t.evaluation.log
    report = next((x for x in log.splitlines() if "CLOCKS REPORT" in x), "")
    print("GPU CLOCKS", report[:600])
    assert report and "denied" in report, log[-2000:]
    assert "ALLOWED" not in report, report
    assert gpu_lab.run_good().evaluation.status.value == "PASSED"


def test_a_runner_cannot_change_other_processes_on_the_gpu_machine(gpu_lab: Lab) -> None:
    """A CUDA runner has no pid namespace, so it can name the worker (its parent) and the other
    runners: their priority, CPU affinity, scheduling class, I/O priority, pages and limits must
    stay out of its reach, its own process within it, and the honest solution after it PASSED."""
    t = gpu_lab.run("tamper_other_processes")
    log = t.evaluation.log
    report = next((x for x in log.splitlines() if "TAMPER REPORT" in x), "")
    print("GPU TAMPER", report[:600], "| denied lines:", sum("denied:" in x for x in log.splitlines()))
    assert report.startswith("TAMPER REPORT changed 0:"), log[-2000:]
    assert "own nice" in report and "own affinity" in report and "own limit" in report, report
    assert "denied: prlimit" in log, log[-2000:]  # it did name other processes (its parent at least)
    assert gpu_lab.run_good().evaluation.status.value == "PASSED"


def test_system_v_ipc_is_refused_on_the_gpu_machine(gpu_lab: Lab) -> None:
    """System V segments and message queues outlive a runner, mapped by nobody: refused on the GPU
    machine too (CUDA runners keep memfd and /dev/shm, watched; not these)."""
    t = gpu_lab.run("sysv_ipc_stash", KEY=0x46000000 | (os.getpid() & 0xFFFFFF), MB=64)
    log = t.evaluation.log
    assert t.evaluation.status.value == "PASSED", log[-2000:]
    assert "denied: shmget" in log and "denied: mq_open" in log and "LEFT" not in log, log[-2000:]


def _graph(t) -> dict:
    """The device-time round's record: the trace's witness itself, or beside the coarse one's."""
    w = ((t.evaluation.correctness.extra or {}) if t.evaluation.correctness else {}).get("witness") or {}
    return w if w.get("clock") == "graph_replay" else (w.get("graph") or {})


@pytest.mark.parametrize("cost", [1, 2, 4, 8])
def test_a_modest_forgery_is_caught_whatever_the_call_costs(gpu_lab: Lab, cost: int) -> None:
    """rewrite_stats_modest divides its statistics by 3.5: above a quarter of the memory floor, and
    hidden by the coarse round's handover, which allows a call its data's handover time (~ms). Its
    call is `cost` RMSNorms of 4096 x 256 (~6 us each on an H100). Timed as CUDA-graph replays on
    inputs drawn inside them, hundreds of calls a round, it is disputed; where the forged claim is
    under the time the runner's own timing gives the smallest kernel (one RMSNorm: ~1.7 us claimed
    against 2.6 us) the claim stands only if the round's own estimate vouches for it. Either way
    the trace is not PASSED with the forged latency."""
    from tests.bench.conftest import rms_workload

    wl = rms_workload(4096, uuid="rms_graph_gpu")
    t = gpu_lab.run("rewrite_stats_modest", workload=wl, GPU_COST=cost)
    ev = t.evaluation
    extra = (ev.correctness.extra or {}) if ev.correctness else {}
    print("GPU modest", cost, ev.status.value, (ev.log.splitlines() or [""])[0][:400], flags(t),
          ev.performance.latency_ms if ev.performance else None, _graph(t))
    assert ev.status.value == "RUNTIME_ERROR", (ev.status, flags(t), extra.get("witness"), ev.log[-2000:])
    # judged by the device-time round (a dispute of its CUDA-graph replays, or a floor claim it did
    # not vouch for), not by the coarse round
    assert ("timing_disputed" in ev.log and "CUDA-graph replays" in ev.log) or "implausible_latency" in ev.log, ev.log[-2000:]


def test_a_solution_that_computes_a_third_of_the_captured_calls_is_caught(gpu_lab: Lab) -> None:
    """skip_captured_calls computes one captured call in three (garbage, honestly hashed, for the
    others) and claims a third of its time: each round's 8 checked calls all land on computed ones
    with probability (1/3)^8, so the round is `witness_wrong`."""
    from tests.bench.conftest import rms_workload

    t = gpu_lab.run("skip_captured_calls", workload=rms_workload(4096, uuid="rms_graph_skip"))
    ev = t.evaluation
    g = _graph(t)
    print("GPU skip", ev.status.value, sorted(flags(t)), g)
    assert ev.status.value != "PASSED", (ev.status, g, sorted(flags(t)))
    assert g.get("captured") is True or "CUDA-graph replays" in ev.log, (g, ev.log[-2000:])


def test_an_honest_solution_passes_the_device_time_round(gpu_lab: Lab) -> None:
    from tests.bench.conftest import rms_workload

    for batch in (8, 4096):
        t = gpu_lab.run_good(workload=rms_workload(batch, uuid=f"rms_graph_honest_{batch}"))
        ev = t.evaluation
        g = _graph(t)
        print("GPU honest graph", batch, ev.performance.latency_ms, g)
        assert ev.status.value == "PASSED", ev.log[-2000:]
        assert g.get("captured") is True and g.get("est_ms") is not None, g
        assert "timing_disputed" not in flags(t), (g, ev.performance.latency_ms)


@pytest.mark.parametrize("attack", ["reused_output_buffer", "output_per_input_address"])
def test_a_solution_that_returns_a_static_output_buffer_passes_the_device_time_round(gpu_lab: Lab, attack: str) -> None:
    """Honest solutions that return one static output buffer every call (a CUDA-graph or
    workspace kernel's habit), or one per input address: the captured round kept each call's
    returned tensor until the hash after its k calls, so every call hashed and saved as the last
    one, and the H200 failed them as witness_wrong (session 24, call 1). Each call's outputs are
    now copied as it returns, the null's too."""
    from tests.bench.conftest import rms_workload

    for batch in (8, 4096):
        t = gpu_lab.run(attack, workload=rms_workload(batch, uuid=f"rms_graph_static_{batch}"), COST=1)
        ev = t.evaluation
        g = _graph(t)
        print("GPU static", attack, batch, ev.status.value, ev.performance.latency_ms if ev.performance else None, g)
        assert ev.status.value == "PASSED", (sorted(flags(t)), g, ev.log[-2000:])
        assert g.get("captured") is True and "timing_disputed" not in flags(t), (g, sorted(flags(t)))


def test_outputs_made_after_the_timed_reply_do_not_hash(gpu_lab: Lab) -> None:
    """late_outputs answers the timed round at once and writes its outputs afterwards: the
    digests it replied cannot be those of its outputs."""
    from tests.bench.conftest import rms_workload

    t = gpu_lab.run("late_outputs", workload=rms_workload(4096, uuid="rms_graph_late"))
    ev = t.evaluation
    assert ev.status.value != "PASSED", (ev.status, _graph(t), sorted(flags(t)), ev.log[-2000:])
    assert gpu_lab.run_good().evaluation.status.value == "PASSED"


SYNCING_RMS = """import torch


def run(x, weight, eps):
    # a host synchronisation inside the call (as data-dependent shapes need): no CUDA graph can
    # hold it; and a draw from torch's default generator, which a failed capture leaves unusable
    scale = float(x.abs().amax()) * 0.0 + 1.0
    noise = torch.randn(1, device=x.device) * 0.0
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps)) * scale + noise.half()
"""


@pytest.mark.parametrize("batch", [64, 4096])
def test_an_honest_solution_that_cannot_be_captured_is_judged_by_the_eager_round(gpu_lab: Lab, batch: int) -> None:
    """A host synchronisation in every call: no CUDA graph holds it, so the same round runs
    eagerly (draws, calls, hashes from the seed, timed from outside) and the honest claim stands."""
    from flashinfer_bench.bench.client import evaluate_via_worker
    from flashinfer_bench.bench.loader import _shim_build
    from tests.bench.conftest import make_solution, rms_workload

    sol = make_solution("syncing_rms", SYNCING_RMS, gpu_lab.definition)
    t = evaluate_via_worker(gpu_lab.definition, sol, rms_workload(batch, uuid=f"rms_graph_sync_{batch}"),
                            _shim_build(sol, gpu_lab.cache), gpu_lab.config, dataset_root=gpu_lab.dataset)
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log[-3000:]
    w = ev.correctness.extra["witness"]
    print("GPU eager honest", batch, ev.performance.latency_ms, sorted(flags(t)), w)
    assert "witness_eager" in flags(t) and w.get("clock") == "eager_replay", (sorted(flags(t)), w)
    assert w.get("captured") is False and w.get("bad_calls") == 0 and w["est_ms"] <= w["bound_ms"], w
    assert gpu_lab.run_good().evaluation.status.value == "PASSED"


def test_a_forgery_that_cannot_be_captured_is_caught_by_the_eager_round(gpu_lab: Lab) -> None:
    """rewrite_stats_modest with a host synchronisation in each call (no CUDA graph can hold it)
    and its statistics divided by 10: until session 16 the coarse round judged it (its clock holds
    the data's handover, ~ms) or, over 48 MiB a round, nobody (`unwitnessed`, PASSED)."""
    from tests.bench.conftest import rms_workload

    t = gpu_lab.run("rewrite_stats_modest", workload=rms_workload(4096, uuid="rms_eager_forged"),
                    GPU_COST=8, FACTOR=10, SYNC=1)
    ev = t.evaluation
    print("GPU eager forged", ev.status.value, ev.log.splitlines()[0][:400])
    assert ev.status.value == "RUNTIME_ERROR", (ev.status, sorted(flags(t)), ev.log[-2000:])
    assert "eager replays" in ev.log and ("timing_disputed" in ev.log or "implausible_latency" in ev.log), ev.log[-2000:]
    assert gpu_lab.run_good().evaluation.status.value == "PASSED"
