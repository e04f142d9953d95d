"""The workflow's job server (the build zygote plus the workflow's jobs) runs a job script
(scripts/<stage>.py) in a fork, as the job would run itself: its stdio, cwd, arguments and exit
status."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from flashinfer_bench.compile import zygote
from flashinfer_bench.pipeline import job_server

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture(scope="module")
def running_server(tmp_path_factory: pytest.TempPathFactory):
    mp = pytest.MonkeyPatch()
    mp.setenv("FIB_ZYGOTE_DIR", str(tmp_path_factory.mktemp("jobserver")))
    mp.delenv("FIB_BUILD_ZYGOTE", raising=False)
    job_server.turn_on()  # sets FIB_BUILD_ZYGOTE=1 for this process and its children
    path = zygote.socket_path()
    deadline = time.monotonic() + 120
    while (s := zygote.connect(path, 0.5)) is None:
        assert time.monotonic() < deadline, "the job server did not come up"
        time.sleep(0.2)
    s.close()
    yield path
    path.unlink(missing_ok=True)  # the server exits when its socket is gone
    mp.undo()


def _run(argv: list, script: str, cwd: Path) -> subprocess.CompletedProcess:
    """`script argv` as a rule runs it."""
    return subprocess.run([sys.executable, "-S", str(SCRIPTS / script), *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def _served(argv: list, script: str, cwd: Path) -> str:
    """What scripts/_job.py's hand-over returns for this job: 'None' when no server ran it,
    else the server fork's exit status."""
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(SCRIPTS)!r})\n"
        f"sys.argv = [{str(SCRIPTS / script)!r}, *{argv!r}]\n"
        "import _job\n"
        f"print(_job._in_job_server({str(SCRIPTS / script)!r}))\n"
    )
    p = subprocess.run([sys.executable, "-S", "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)
    return p.stdout.strip()


def test_a_workflow_job_runs_in_a_fork_with_the_callers_stdio_cwd_and_status(running_server, tmp_path) -> None:
    notes = tmp_path / "notes.json"
    notes.write_text('{"by_file": {"d.json": ["d.json: description: is empty"]}, "problems": [], "skipped": []}')
    argv = ["--file", "d.json", "--kind", "definition", "--plan-notes", notes.name, "--out", "out/report.txt", "--log", "log.txt"]
    p = _run(argv, "validate.py", tmp_path)
    assert p.returncode == 0, p.stderr
    report = (tmp_path / "out" / "report.txt").read_text()  # relative paths: the caller's cwd
    assert report.startswith("d.json: definition: 1 problem(s)") and "is empty" in report
    assert "[flashinfer-bench] validation: 1 problem(s) in d.json" in p.stderr  # the job's stderr is the caller's
    assert _served(argv, "validate.py", tmp_path) == "0"  # the server runs it


def test_a_failing_workflow_job_in_the_server_fails_with_its_traceback(running_server, tmp_path) -> None:
    argv = ["--dataset", str(tmp_path), "--solution-file", "missing.json", "--definition-file", "missing_def.json",
            "--out", "b.json", "--log", "b.log"]
    p = _run(argv, "compile.py", tmp_path)
    assert p.returncode != 0
    assert "Traceback" in p.stderr and "missing.json" in p.stderr
    assert not (tmp_path / "b.json").exists()
    assert _served(argv, "compile.py", tmp_path) == "1"  # the server runs it, and it fails


def test_without_a_server_the_job_runs_itself(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("FIB_ZYGOTE_DIR", str(tmp_path / "none"))
    notes = tmp_path / "notes.json"
    notes.write_text('{"by_file": {}, "problems": [], "skipped": []}')
    argv = ["--file", "d.json", "--kind", "definition", "--plan-notes", notes.name, "--out", "o.txt", "--log", "l.txt"]
    assert _served(argv, "validate.py", tmp_path) == "None"
    p = _run(argv, "validate.py", tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "o.txt").read_text() == "d.json: definition: OK\n"
