"""Red team, part five: cross-talk and the gaps of the runner's confinement (issue 15): file
descriptors, code planted for later processes, signals to other processes, the host's /proc,
metadata changes outside scratch, an unbounded scratch, memory no resident-set watch sees,
hostile bytes in output.

Before the defences: 180k descriptors held by one solution's processes; 197 host processes
listed with their command lines; utime/chmod/setxattr on the dataset succeeded; 900 MiB and
200k files written into scratch; 3 GiB held in memfds past a 2 GiB memory limit; terminal escape
sequences recorded as they came.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from flashinfer_bench.bench.client import ping_worker

from .conftest import SECRET, Lab, flags, running_lab, tree_digest


def _assert_next_is_fine(lab: Lab) -> None:
    t = lab.run_good()
    assert t.evaluation.status.value == "PASSED", t.evaluation.log


def _line(log: str, tag: str) -> str:
    """The last line holding `tag` (a traceback also shows the source line that made it)."""
    return next((line for line in reversed(log.splitlines()) if tag in line), "")


def test_descriptors_are_bounded_per_process(lab: Lab) -> None:
    t = lab.run("fd_exhaust", N=8)
    ev = t.evaluation
    report = _line(ev.log, "FD REPORT")
    assert report, ev.log[-2000:]
    hard = int(report.split("hard limit ")[1].split(",")[0])
    held = int(report.split(" held ")[1].split()[0])
    assert hard <= 1024, report
    assert held <= 9 * hard, report
    _assert_next_is_fine(lab)


def test_code_cannot_be_planted_for_later_processes(lab: Lab, unchanged) -> None:
    t = lab.run("poison_shared_caches")
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log
    assert "BREACH" not in ev.log, ev.log
    assert ev.log.count("denied:") == 8, ev.log
    unchanged()


def test_other_processes_cannot_be_signalled(lab: Lab) -> None:
    t = lab.run("stop_competitors")
    ev = t.evaluation
    report = _line(ev.log, "SIGNAL REPORT")
    assert "signalled 0" in report, ev.log[-2000:]
    assert ping_worker("cpu", lab.config) is not None
    _assert_next_is_fine(lab)


def test_the_hosts_processes_are_not_visible(lab: Lab) -> None:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", f"--token={lab.marker}"],
                         env={**os.environ, **SECRET})
    try:
        t = lab.run("proc_snoop")
    finally:
        p.kill()
        p.wait()
    ev = t.evaluation
    report = _line(ev.log, "PROC REPORT")
    assert report, ev.log[-2000:]
    visible = int(report.split("PROC REPORT ")[1].split()[0])
    assert visible <= 8, report  # the runner's own pid namespace: init, the runner, its children
    text = t.model_dump_json()
    assert lab.marker not in text and all(v not in text for v in SECRET.values())


def _meta(p: Path):
    st = os.lstat(p)
    try:
        xs = tuple(os.listxattr(p))
    except OSError:
        xs = ()
    return st.st_mode, st.st_mtime_ns, xs


@pytest.fixture(scope="module")
def lab_without_mounts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """Runners without the read-only mount namespace: what a runner gets where a GPU is visible
    (on the H200 a CUDA runner inside it failed CUDA init, error 304) or FIB_SANDBOX_RO_MOUNTS=0."""
    with running_lab(tmp_path_factory.mktemp("security-nomounts"), env={"FIB_SANDBOX_RO_MOUNTS": "0"}) as lab:
        yield lab


@pytest.mark.parametrize("attack, tries", [("metadata_outside", 12), ("metadata_by_fd", 21)])
@pytest.mark.parametrize("mounts", ["mount namespace", "no mount namespace (as with a GPU)"])
def test_metadata_outside_scratch_cannot_change(lab: Lab, lab_without_mounts: Lab, mounts: str, attack: str,
                                                tries: int) -> None:
    """utime, chmod, chown and xattrs, by path, by descriptor and by the *at calls: denied with and
    without the mount namespace (seccomp denies them all; the read-only mounts add EROFS)."""
    lab = lab if mounts == "mount namespace" else lab_without_mounts
    tg = lab.targets()
    files = [Path(tg["trace_file"]), Path(tg["other_solution_json"]), Path(tg["other_artifact_file"])]
    before = {p: _meta(p) for p in files}
    digest = tree_digest(lab.dataset)
    t = lab.run(attack)
    ev = t.evaluation
    report = _line(ev.log, "METADATA REPORT")
    assert report and "BREACH" not in report and report.count("denied:") == tries, ev.log[-2000:]
    assert {p: _meta(p) for p in files} == before
    assert tree_digest(lab.dataset) == digest
    sandbox = str(ev.environment.model_dump().get("sandbox", ""))
    assert ("mountns" in sandbox) == (mounts == "mount namespace"), sandbox
    assert ev.status.value == "PASSED", ev.log[-2000:]  # the attack's own honest answer still counts


def _du(root: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(root):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
            except OSError:
                pass
    return total


def test_scratch_is_bounded_and_goes_with_the_runner(lab: Lab) -> None:
    t = lab.run("scratch_fill", FILES=40, MB=15, INODES=50_000)  # 600 MiB, 50k files vs 256 MiB, 20k
    ev = t.evaluation
    report = _line(ev.log, "SCRATCH REPORT")
    assert report and "BREACH" not in report, ev.log[-2000:]
    mib = int(report.split("bytes stopped at ")[1].split()[0])
    files = int(report.split("files stopped at ")[1].split(":")[0])
    assert mib <= 256 and files <= 20_000, report
    _assert_next_is_fine(lab)
    # the tmpfs lives in the runner's mount namespace: the disk under the worker holds nothing of it
    assert _du(lab.worker_dir) < 64 << 20


def test_scratch_on_disk_is_bounded_without_the_mount_namespace(lab_without_mounts: Lab) -> None:
    """Where the runner has no tmpfs scratch (no mount namespace: CUDA runners), its scratch is a
    directory on the worker's disk: the supervisor measures it while the solution runs and stops
    the runner past the same quota (bytes and files), and the directory goes with the runner."""
    lab = lab_without_mounts
    t = lab.run("scratch_fill", FILES=40, MB=15, INODES=50_000)  # 600 MiB, 50k files vs 256 MiB, 20k
    ev = t.evaluation
    assert ev.status.value != "PASSED", ev.log[-2000:]
    assert "scratch quota exceeded" in ev.log and "FIB_SANDBOX_SCRATCH" in ev.log, ev.log[-2000:]
    assert "BREACH" not in ev.log
    _assert_next_is_fine(lab)
    assert _du(lab.worker_dir) < 64 << 20  # nothing of it left on the disk


def test_anonymous_memory_files_are_refused_on_the_cpu(lab: Lab) -> None:
    t = lab.run("memfd_fill", N=200, MB=15)  # 3 GiB against a 2 GiB limit
    ev = t.evaluation
    assert "MEMFD REPORT" not in ev.log, ev.log[-2000:]
    assert "memfd stopped at 0 MiB: PermissionError" in ev.log, ev.log[-2000:]
    _assert_next_is_fine(lab)


def test_hostile_bytes_in_output_are_recorded_inert(lab: Lab) -> None:
    t = lab.run("hostile_output_bytes")
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log[-2000:]
    assert ev.performance is None and "unavailable" not in ev.environment.hardware
    raw = t.model_dump_json()
    raw.encode("utf-8")
    for ch in ("\x1b", "\r", "\x00", "\x07"):
        assert ch not in ev.log, repr(ch)
    assert "\\x1b[2J" in ev.log and "status: PASSED speedup" in ev.log  # kept, but as text
    assert json.loads(raw)["evaluation"]["status"] == "RUNTIME_ERROR"
    assert "fork" not in flags(t)
    _assert_next_is_fine(lab)
