"""Red team, part four: the entry module's body at build time (issue 15), through
`flashinfer_bench.compile.build` (the build child the pipeline uses).

Before the defences each of these worked: metadata changes on the dataset and on another
solution's artifact; the user's exported secret and other processes' environments and command
lines read at build and printed into a trace at run time; a forged `info.hash` in the build's
report made the worker run the solution in another solution's runner; a `manifest.json` symlink
made the trusted parent overwrite another solution's source; a `build.log` symlink made it copy
the worker's secret into the build result.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, Tuple

import pytest

from flashinfer_bench.bench.client import evaluate_via_worker
from flashinfer_bench.bench.loader import build_solution
from flashinfer_bench.compile import build
from flashinfer_bench.sandbox.procfs import task_state

from tests.bench.conftest import GOOD_VR, make_solution, rms_workload
from .conftest import SECRET, Lab, env_vars, tree_digest


def _meta(p: Path) -> Tuple[int, int, tuple]:
    st = os.lstat(p)
    try:
        xs = tuple(os.listxattr(p))
    except OSError:
        xs = ()
    return st.st_mode, st.st_mtime_ns, xs


@pytest.fixture(scope="module")
def victim(lab: Lab) -> Dict:
    """Another solution, built through compile.build into its own cache."""
    sol = make_solution("victim_rms", GOOD_VR, lab.definition)
    b = build_solution(sol, lab.definition, lab.tmp / "bcache")
    assert b["status"] == "OK", b
    return {"solution": sol, "build": b, "source": next(Path(b["artifact_dir"]).rglob("main.py"))}


@pytest.fixture
def host_secret(lab: Lab) -> Iterator[None]:
    """A process of the user's with a token on its command line and a secret in its environment,
    and the secret exported in the environment the build runs in."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", f"--token={lab.marker}"],
                         env={**os.environ, **SECRET})
    try:
        with env_vars(SECRET):
            yield
    finally:
        p.kill()
        p.wait()


def _build(lab: Lab, name: str, victim: Dict, **targets) -> Tuple[object, str]:
    t = {"other_artifact_file": str(victim["source"]), "victim_hash": victim["build"]["hash"], **targets}
    sol = lab.solution(name, targets=t)
    r = build(sol, lab.definition, lab.tmp / "bcache")
    return r, (r.log or "") + (r.message or "")


@pytest.mark.parametrize("mounts", ["1", "0"], ids=["mount namespace", "no mount namespace (as with a GPU)"])
def test_metadata_changes_at_build_are_refused(lab: Lab, victim: Dict, unchanged, mounts: str) -> None:
    files = [Path(lab.targets()["trace_file"]), Path(lab.targets()["other_solution_json"]), victim["source"]]
    before = {p: _meta(p) for p in files}
    with env_vars({"FIB_SANDBOX_RO_MOUNTS": mounts}):
        r, log = _build(lab, "build_metadata", victim, mounts=mounts)  # its own source: built, not cached
    report = next((line for line in log.splitlines() if "METADATA REPORT" in line), "")
    assert report, log[-2000:]
    assert "BREACH" not in report and report.count("denied:") == 12, report
    assert {p: _meta(p) for p in files} == before
    unchanged()


def test_secrets_read_at_build_do_not_reach_a_trace(lab: Lab, victim: Dict, host_secret) -> None:
    sol = lab.solution("build_env_leak")
    with env_vars(SECRET):
        b = build_solution(sol, lab.definition, lab.tmp / "bcache")
    assert b["status"] == "OK", b
    t = evaluate_via_worker(lab.definition, sol, rms_workload(8), b, lab.config, dataset_root=lab.dataset)
    text = t.model_dump_json()
    assert "LEAKED AT BUILD" in t.evaluation.log, t.evaluation.log[-2000:]
    for v in SECRET.values():
        assert v not in text
    assert lab.marker not in text, "another process's command line reached the trace"
    assert "denied: /proc" in t.evaluation.log or "read 0 cmdlines and 0 environments" in t.evaluation.log


def test_a_forged_build_report_cannot_take_another_solutions_runner(lab: Lab, victim: Dict) -> None:
    wl = rms_workload(64, uuid="victim_wl")
    vsol, vbuild = victim["solution"], victim["build"]
    before = evaluate_via_worker(lab.definition, vsol, wl, vbuild, lab.config, dataset_root=lab.dataset)
    assert before.evaluation.status.value == "PASSED", before.evaluation.log
    sol = lab.solution("build_forge_manifest", targets={"victim_hash": vbuild["hash"]})
    b = build_solution(sol, lab.definition, lab.tmp / "bcache")
    assert b["status"] == "OK", b
    assert b["hash"] != vbuild["hash"], "the build's report overrode the artifact's hash"
    evaluate_via_worker(lab.definition, sol, wl, b, lab.config, dataset_root=lab.dataset)
    after = evaluate_via_worker(lab.definition, vsol, wl, vbuild, lab.config, dataset_root=lab.dataset)
    ev = after.evaluation
    assert ev.status.value == "PASSED", ev.log
    # the shadowed getter costs 2 ms a call in a runner it reached: noise here is well under that
    assert ev.performance.latency_ms < 3 * before.evaluation.performance.latency_ms + 0.5


def test_a_planted_manifest_link_cannot_overwrite_another_solution(lab: Lab, victim: Dict, unchanged) -> None:
    art = Path(victim["build"]["artifact_dir"])
    before = tree_digest(art)
    r, log = _build(lab, "build_symlink_manifest", victim)
    assert "planted manifest.json" in log, log[-2000:]
    assert tree_digest(art) == before, "the victim's artifact changed"
    assert "removed 1 symlink" in log, log[-2000:]
    unchanged()


def test_a_planted_log_link_cannot_read_a_secret(lab: Lab, victim: Dict, unchanged) -> None:
    r, log = _build(lab, "build_symlink_log", victim, secret=str(lab.secret))
    assert r.status == "COMPILE_ERROR", (r.status, log[-2000:])
    assert "failing on purpose" in log or "planted" in log or "denied" in log, log[-2000:]
    assert lab.marker not in log, "the secret reached the build result"
    unchanged()


def test_a_build_that_times_out_leaves_nothing_running(lab: Lab, tmp_path: Path) -> None:
    """The entry module's body double-forks a daemon into its own session, then hangs past the
    build's timeout: the timed-out build is COMPILE_ERROR and the daemon dies with it (killing
    the build child's process group missed it: another session, reparented to init)."""
    import re
    import time

    from flashinfer_bench.sandbox.procfs import task_state

    sol = lab.solution("build_timeout_daemon")
    r = build(sol, lab.definition, tmp_path / "cache", timeout_s=8)
    assert r.status == "COMPILE_ERROR" and "timed out" in (r.message or ""), (r.status, r.message)
    m = re.search(r"DAEMON PID (\d+)", r.log or "")
    assert m, (r.log or "")[-2000:]
    pid = int(m.group(1))
    end = time.monotonic() + 5
    while time.monotonic() < end and task_state(pid) not in (None, "Z"):
        time.sleep(0.05)
    state = task_state(pid)
    if state not in (None, "Z"):
        os.kill(pid, 9)  # do not leave it burning a core for the rest of the suite
    assert state in (None, "Z"), f"the build's daemon {pid} outlived the timed-out build ({state})"


DAEMON_THEN_HANG = """import os, time
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        print('DAEMON PID', os.getpid(), flush=True)
        time.sleep(120)
    os._exit(0)
os.wait()
time.sleep(120)


def run(x, weight, eps):
    return x
"""

BUILD_IN_A_PROCESS = """import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from tests.bench.conftest import make_solution, rms_definition
from flashinfer_bench.compile import build
d = rms_definition()
build(make_solution("daemon_then_hang", Path(sys.argv[2]).read_text(), d), d, Path(sys.argv[3]), timeout_s=120)
"""


def test_a_build_whose_parent_is_killed_leaves_nothing_running(tmp_path: Path) -> None:
    """The process running a build is SIGKILLed mid-build (a user's kill -9, the OOM killer): the
    build child's own death signal would end it alone and hand the daemon it started in a session
    of its own to init. The keeper kills the build whole."""
    import signal

    from flashinfer_bench.sandbox.procfs import task_state
    from tests.compile.helpers import daemon_pid_in_logs, state_after

    src = tmp_path / "main.py"
    src.write_text(DAEMON_THEN_HANG)
    repo = str(Path(__file__).resolve().parents[2])
    proc = subprocess.Popen([sys.executable, "-c", BUILD_IN_A_PROCESS, repo, str(src), str(tmp_path / "cache")],
                            start_new_session=True)
    pid = daemon_pid_in_logs(tmp_path / "cache")
    try:
        assert pid is not None, "the build's daemon did not start"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        state = state_after(pid)
        assert state in (None, "Z"), f"the build's daemon {pid} outlived the killed build ({state})"
    finally:
        if pid is not None and task_state(pid) not in (None, "Z"):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("payload", ['"[]"', '"{\\"status\\": \\"OK\\", \\"message\\": 7}"', '"[" * 100000',
                                     '"{\\"status\\": \\"PASSED\\"}"'])
def test_a_forged_build_report_of_any_shape_is_the_solutions_compile_error(lab: Lab, tmp_path: Path, payload: str) -> None:
    """`build_result_type` writes the child's report itself, valid JSON of the wrong shape: the
    trusted parent raised (AttributeError, RecursionError) out of `build()`, and the pipeline's
    compile job died: its whole definition was neither aggregated nor reported. Now it is this
    solution's COMPILE_ERROR."""
    sol = lab.solution("build_result_type", PAYLOAD=payload)
    r = build(sol, lab.definition, tmp_path / "cache")
    assert r.status == "COMPILE_ERROR", (r.status, r.message)


@pytest.mark.parametrize("payload", ['"[]"', '"{\\"child_paths\\": {\\"a\\": 1}}"', '"[" * 100000'])
def test_a_malformed_triton_group_file_does_not_break_the_build(lab: Lab, tmp_path: Path, payload: str) -> None:
    """`build_triton_grp_type` leaves a Triton group file of the wrong shape in its cache (every
    build has one): the parent's path rewriting raised out of `build()`. Now it is left as it is."""
    sol = lab.solution("build_triton_grp_type", PAYLOAD=payload)
    r = build(sol, lab.definition, tmp_path / "cache")
    assert r.status == "OK", (r.status, r.message)


def test_a_sparse_build_log_is_read_within_its_cap(lab: Lab, tmp_path: Path) -> None:
    """`build_sparse_log` truncates its build log to 1 GiB (sparse: no disk used) and fails: the
    parent read it whole (~3 GiB of its memory). Now the file-size limit refuses the truncate or
    the parent reads the log's head and tail only."""
    import resource

    script = (
        "import resource, sys\nfrom pathlib import Path\nsys.path.insert(0, sys.argv[1])\n"
        "from tests.bench.conftest import make_solution, rms_definition\nfrom flashinfer_bench.compile import build\n"
        "src = Path(sys.argv[1], 'tests/security/attacks/build_sparse_log.py').read_text().replace('__BYTES__', str(1 << 30))\n"
        "d = rms_definition()\n"
        "r = build(make_solution('sparse_log', src, d), d, Path(sys.argv[2]) / 'cache')\n"
        "print(r.status, len(r.log), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)\n"
    )
    repo = str(Path(__file__).resolve().parents[2])
    p = subprocess.run([sys.executable, "-c", script, repo, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    status, log_chars, maxrss_mib = p.stdout.split()[-3:]
    assert status == "COMPILE_ERROR" and int(log_chars) <= 300_000, p.stdout
    assert int(maxrss_mib) < 700, f"the building process peaked at {maxrss_mib} MiB"
    del resource


def test_a_build_cannot_leave_more_than_its_budget(lab: Lab, tmp_path: Path) -> None:
    """`build_disk_fill` writes real data and a sparse 1 TiB file into its build directory: it
    was published with the artifact and kept. Now one file is held to FIB_BUILD_FSIZE_MB and the
    directory to FIB_BUILD_MAX_MB before publishing."""
    with env_vars({"FIB_BUILD_FSIZE_MB": "64"}):
        sol = lab.solution("build_disk_fill", MB=8)
        r = build(sol, lab.definition, tmp_path / "cache")
    assert r.status == "COMPILE_ERROR", (r.status, r.message)
    assert not list((tmp_path / "cache").rglob("sparse.bin")), "the sparse file was kept"


def test_a_build_cannot_unset_its_reaper_and_outlive_itself(lab: Lab, tmp_path: Path) -> None:
    """`build_unreaped_daemon` (session 23) unset the build child's subreaper flag (prctl was not
    filtered) and double-forked: its daemon went to init, outlived the build, planted
    `manifest.json` as a symlink after the parent's sanitizing (the unconfined parent wrote the
    manifest into a file outside the build), rewrote the published manifest with another build's
    hash and grew the artifact past its budget. Now seccomp refuses PR_SET_CHILD_SUBREAPER, the
    daemon stays below the build child and dies with it, and the manifest is created, never
    followed."""
    import re
    import time

    victim = tmp_path / "victim.txt"
    victim.write_text("the victim's own bytes\n")
    sol = lab.solution("build_unreaped_daemon", VICTIM=victim, VICTIM_HASH="deadbeef", SECONDS=6, GROW_FILES=2)
    r = build(sol, lab.definition, tmp_path / "cache")
    log = (r.log or "") + (r.message or "")
    assert "prctl(PR_SET_CHILD_SUBREAPER, 0) = -1 errno 1" in log, log[-2000:]
    said = re.search(r"DAEMON PID (\d+)", log)  # a daemon killed with the build may not get to say it
    if said:
        pid = int(said.group(1))
        deadline = time.monotonic() + 5  # killed with the build: gone within moments
        while task_state(pid) not in (None, "Z", "X") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert task_state(pid) in (None, "Z", "X"), f"the build's daemon outlived it ({task_state(pid)})"
    time.sleep(1.5)  # what a surviving daemon did half a second after publishing
    assert victim.read_text() == "the victim's own bytes\n"
    art = Path(r.artifact_dir)
    man = art / "manifest.json"
    assert not man.is_symlink() and json.loads(man.read_text())["hash"] == r.hash != "deadbeef"
    assert not list(art.glob("grown*.bin"))


def test_a_manifest_entry_left_by_the_build_is_replaced(lab: Lab, tmp_path: Path) -> None:
    """`build_manifest_dir` left a directory named `manifest.json`: publishing raised
    IsADirectoryError out of `build()`. Whatever is at that name now goes first."""
    r = build(lab.solution("build_manifest_dir"), lab.definition, tmp_path / "cache")
    assert r.status == "OK", (r.status, r.message, (r.log or "")[-1500:])
    man = Path(r.artifact_dir) / "manifest.json"
    assert man.is_file() and json.loads(man.read_text())["hash"] == r.hash
