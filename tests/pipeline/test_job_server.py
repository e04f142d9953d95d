"""The workflow's job server (the build zygote plus the workflow's jobs) runs a validate / compile /
aggregate / report job in a fork, as the job would run itself: its stdio, cwd and exit status."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from flashinfer_bench.compile import zygote
from flashinfer_bench.pipeline import job_server

JOB_MAIN = Path(job_server.__file__).resolve().parent / "job_main.py"


@pytest.fixture(scope="module")
def running_server(tmp_path_factory: pytest.TempPathFactory):
    mp = pytest.MonkeyPatch()
    mp.setenv("FIB_ZYGOTE_DIR", str(tmp_path_factory.mktemp("jobserver")))
    mp.delenv("FIB_BUILD_ZYGOTE", raising=False)
    job_server.turn_on()  # sets FIB_BUILD_ZYGOTE=1 for this process and its children
    deadline = time.monotonic() + 120
    while (s := zygote.connect(zygote.socket_path(), 0.5)) is None:
        assert time.monotonic() < deadline, "the job server did not come up"
        time.sleep(0.2)
    s.close()
    yield zygote.socket_path()
    zygote.socket_path().unlink(missing_ok=True)  # the server exits when its socket is gone
    mp.undo()


def _job_in_server(argv: list, cwd: Path) -> subprocess.CompletedProcess:
    """A process that hands `job_main.py argv` to the job server, as the workflow's shell jobs do;
    prints 'forked' when the server ran it (None means the job would run itself)."""
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('jm', {str(JOB_MAIN)!r})\n"
        "jm = importlib.util.module_from_spec(spec); spec.loader.exec_module(jm)\n"
        "rc = jm._in_job_server(sys.argv[1:])\n"
        "print('forked' if rc is not None else 'not forked', flush=True)\n"
        "sys.exit(rc or 0)\n"
    )
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_a_workflow_job_runs_in_a_fork_with_the_callers_stdio_cwd_and_status(running_server, tmp_path) -> None:
    bad = tmp_path / "bad_definition.json"
    bad.write_text('{"name": "x", "op_type": "rmsnorm"}')  # required fields missing
    p = _job_in_server(["validate", "--rule", "validate_definition", "--input", bad.name, "--out", "out/report.txt",
                        "--log", "log.txt"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "forked"
    report = (tmp_path / "out" / "report.txt").read_text()  # relative paths: the caller's cwd
    assert "problem(s)" in report and "bad_definition.json" in report
    assert "[flashinfer-bench] validation:" in p.stderr  # the job's stderr is the caller's


def test_a_failing_workflow_job_in_the_server_fails_with_its_traceback(running_server, tmp_path) -> None:
    p = _job_in_server(["compile", "--dataset", str(tmp_path), "--solution-file", "missing.json",
                        "--definition-file", "missing_def.json", "--out", "b.json", "--log", "b.log"], cwd=tmp_path)
    assert p.stdout.strip() == "forked"
    assert p.returncode != 0
    assert "Traceback" in p.stderr and "missing.json" in p.stderr
    assert not (tmp_path / "b.json").exists()


def test_without_a_server_the_job_runs_itself(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("FIB_ZYGOTE_DIR", str(tmp_path / "none"))
    p = _job_in_server(["validate", "--rule", "validate_definition", "--input", "x.json", "--out", "o.txt",
                        "--log", "l.txt"], cwd=tmp_path)
    assert p.stdout.strip() == "not forked", p.stderr
