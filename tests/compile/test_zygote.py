"""Builds forked from the build zygote behave like spawned ones: results, errors, timeouts, logs."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from flashinfer_bench.compile import COMPILE_ERROR, OK, build, zygote

from .helpers import PY_ADD, VADD, daemon_pid_in_logs, solution, state_after


def _manifest(r) -> dict:
    return json.loads((Path(r.artifact_dir) / "manifest.json").read_text())


def test_build_is_forked_from_the_zygote_and_loads(running_zygote, cache) -> None:
    r = build(solution({"main.py": PY_ADD}, "main.py::run"), VADD, cache)
    assert r.status == OK, r.log
    assert _manifest(r).get("build_process") == "zygote_fork"


TRITON_ADD_VIA_SUM = (
    "import triton\nimport triton.language as tl\n\n"
    "@triton.jit\n"
    "def _k(A, B, C, N, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    m = offs < N\n"
    "    a = tl.load(A + offs, mask=m, other=0.0)\n"
    "    b = tl.load(B + offs, mask=m, other=0.0)\n"
    "    zero = tl.sum(a * 0.0, axis=0)  # tl.sum is itself a @triton.jit function of triton.language\n"
    "    tl.store(C + offs, a + b + zero, mask=m)\n\n"
    "def run(a, b, c):\n"
    "    n = a.numel()\n"
    "    _k[(triton.cdiv(n, 64),)](a, b, c, n, BLOCK=64)\n"
)


def test_a_triton_build_forked_from_the_zygote_runs_its_kernel(running_zygote, cache) -> None:
    """On a CPU machine the warm-up runs under TRITON_INTERPRET=1, which the build sets for itself:
    the zygote must not have imported Triton before that, or kernels that use triton.language's
    own jit functions (tl.sum, ...) fail with "Cannot call @triton.jit'd outside of the scope of
    a kernel" (found in the example pipeline's rmsnorm_triton)."""
    pytest.importorskip("triton")
    sol = solution({"kernel.py": TRITON_ADD_VIA_SUM}, "kernel.py::run", language="triton", dps=True, name="tri_zyg")
    r = build(sol, VADD, cache)
    assert r.status == OK, r.log
    assert _manifest(r).get("build_process") == "zygote_fork"


def test_errors_and_exits_are_reported_as_from_a_spawned_child(running_zygote, cache) -> None:
    r = build(solution({"main.py": "import nonexistent_pkg_xyz\n" + PY_ADD}, "main.py::run"), VADD, cache)
    assert r.status == COMPILE_ERROR and "main.py:1" in r.message and "nonexistent_pkg_xyz" in r.message + r.log
    r = build(solution({"main.py": "import os\nos._exit(3)\n" + PY_ADD}, "main.py::run"), VADD, cache)
    assert r.status == COMPILE_ERROR and "exit code 3" in r.message


def test_a_hanging_build_times_out_and_is_killed(running_zygote, cache) -> None:
    # a build writes only its own directory: the child's pid reaches the test through the build log
    src = "import os, time\nprint('HANG PID', os.getpid(), flush=True)\ntime.sleep(60)\n" + PY_ADD
    t0 = time.monotonic()
    r = build(solution({"main.py": src}, "main.py::run"), VADD, cache, timeout_s=3)
    assert r.status == COMPILE_ERROR and "timed out after 3 s" in r.message
    assert time.monotonic() - t0 < 30
    pid = int(next(line for line in r.log.splitlines() if line.startswith("HANG PID")).split()[2])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]:
        assert time.monotonic() < deadline, "the hanging build child was not killed"
        time.sleep(0.1)


def daemon_then_hang(hang_s: int) -> str:
    """An entry module whose body double-forks a daemon into a session of its own (it prints its
    pid), then hangs `hang_s` seconds."""
    return ("import os, time\n"
            "if os.fork() == 0:\n"
            "    if os.fork() == 0:\n"
            "        os.setsid()\n"
            "        print('DAEMON PID', os.getpid(), flush=True)\n"
            "        time.sleep(120)\n"
            "    os._exit(0)\n"
            "os.wait()\n"
            f"time.sleep({hang_s})\n") + PY_ADD


def test_a_timed_out_build_takes_what_it_started_in_another_session_along(running_zygote, cache) -> None:
    """The module body double-forks a daemon into a session of its own, then hangs: the zygote
    kills the timed-out build's whole tree (its process group alone missed the daemon)."""
    from flashinfer_bench.sandbox.procfs import task_state

    src = daemon_then_hang(60)
    r = build(solution({"main.py": src}, "main.py::run"), VADD, cache, timeout_s=4)
    assert r.status == COMPILE_ERROR and "timed out" in r.message, (r.status, r.message)
    pid = int(next(line for line in r.log.splitlines() if line.startswith("DAEMON PID")).split()[2])
    deadline = time.monotonic() + 10
    while task_state(pid) not in (None, "Z"):
        if time.monotonic() > deadline:
            import os

            os.kill(pid, 9)
            raise AssertionError("the build's daemon outlived the timed-out build")
        time.sleep(0.1)


def test_a_build_zygote_refuses_workflow_jobs(running_zygote) -> None:
    """Builders know no runner: the build zygote forks builds only (a workflow job then runs
    itself); the workflow's job server adds them (pipeline/job_server.py)."""
    s = zygote.connect(running_zygote, 5.0)
    assert s is not None
    try:
        assert zygote.ask(s, "script", {"script": "/dev/null", "argv": [], "cwd": "/", "env": {}}, [], 10.0) == ("refused", None)
    finally:
        s.close()


def test_a_build_waits_for_no_zygote_when_none_is_starting(monkeypatch, tmp_path, cache) -> None:
    monkeypatch.setenv("FIB_BUILD_ZYGOTE", "1")
    monkeypatch.setenv("FIB_ZYGOTE_DIR", str(tmp_path / "none"))
    t0 = time.monotonic()
    r = build(solution({"main.py": PY_ADD}, "main.py::run", name="no_zygote"), VADD, cache)
    assert r.status == OK, r.log
    assert _manifest(r).get("build_process") != "zygote_fork"
    assert not (tmp_path / "none").exists()  # and started none
    assert time.monotonic() - t0 < 25


def test_a_build_whose_zygote_is_killed_leaves_nothing_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The build zygote is SIGKILLed mid-build (a user's kill -9, the OOM killer): a build child's
    own death signal would end it alone and hand the daemon it started in a session of its own to
    init. The zygote's keeper kills the build whole."""
    import os
    import signal
    import subprocess
    import sys

    from flashinfer_bench.sandbox.procfs import task_state

    monkeypatch.setenv("FIB_BUILD_ZYGOTE", "1")
    monkeypatch.setenv("FIB_ZYGOTE_DIR", str(tmp_path / "zyg"))
    path = zygote.socket_path()
    path.parent.mkdir(mode=0o700)
    zyg = subprocess.Popen([sys.executable, "-m", "flashinfer_bench.compile.zygote", "--socket", str(path)],
                           start_new_session=True, stderr=open(tmp_path / "zygote.log", "wb"))
    src = daemon_then_hang(120)
    sol = tmp_path / "sol.json"
    sol.write_text(solution({"main.py": src}, "main.py::run").model_dump_json())
    builder = None
    pid = None
    try:
        deadline = time.monotonic() + 120
        while (s := zygote.connect(path, 0.5)) is None:
            assert time.monotonic() < deadline and zyg.poll() is None, "the zygote did not come up"
            time.sleep(0.2)
        s.close()
        builder = subprocess.Popen(
            [sys.executable, "-c", "import sys; from pathlib import Path; from flashinfer_bench.compile import build; "
             "from flashinfer_bench.data import Solution; from tests.compile.helpers import VADD; "
             "build(Solution.model_validate_json(Path(sys.argv[1]).read_text()), VADD, Path(sys.argv[2]), timeout_s=120)",
             str(sol), str(tmp_path / "cache")], start_new_session=True)
        pid = daemon_pid_in_logs(tmp_path / "cache")
        assert pid is not None, "the build's daemon did not start"
        os.kill(zyg.pid, signal.SIGKILL)
        zyg.wait()
        state = state_after(pid)
        assert state in (None, "Z"), f"the build's daemon {pid} outlived the killed zygote ({state})"
    finally:
        if pid is not None and task_state(pid) not in (None, "Z"):
            os.kill(pid, signal.SIGKILL)
        for p in (builder, zyg):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
