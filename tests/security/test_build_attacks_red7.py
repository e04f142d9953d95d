"""Red team, part seven (a helper's round on build time): the build zygote's shared selector, a
build report whose `info` the parent re-encodes, hard links left in the build directory.

Each test asserts what the defence should give: a failing test is a working attack.
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from flashinfer_bench.compile import COMPILE_ERROR, OK, build

from tests.bench.conftest import GOOD_VR, make_solution
from .conftest import Lab, env_vars, tree_digest

SLOW_HONEST = "import time\ntime.sleep(__S__)  # an honest build that takes a while (a Triton warm-up, nvcc)\n" + GOOD_VR


def test_a_build_cannot_kill_another_build_through_the_zygote(lab: Lab, running_zygote, tmp_path: Path) -> None:
    """`build_zygote_epoll`: a forked build child holds the zygote's epoll instance and adds fake
    "readable" entries named after the zygote's connection numbers; the zygote reads one as the
    client of another build going away and kills that build. The honest build running beside it
    must still be OK."""
    res = {}
    honest = make_solution("honest_slow_build", SLOW_HONEST.replace("__S__", "6"), lab.definition)

    def victim() -> None:
        res["v"] = build(honest, lab.definition, tmp_path / "vcache")

    t = threading.Thread(target=victim)
    t.start()
    time.sleep(2.0)  # the honest build is running in the zygote
    a = build(lab.solution("build_zygote_epoll", SECONDS=5, LOW=0, ABOVE=1), lab.definition, tmp_path / "acache")
    t.join(120)
    assert "ZYGOTE EPOLL REPORT" in (a.log or ""), (a.status, (a.log or "")[-1500:])
    v = res["v"]
    assert v.status == OK, (v.status, v.message, [ln for ln in (a.log or "").splitlines() if "REPORT" in ln])


def test_a_build_cannot_stall_the_zygote(lab: Lab, running_zygote, tmp_path: Path) -> None:
    """`build_zygote_epoll` naming only the zygote's listening socket (LOW=1, ABOVE=0): the zygote
    blocks in accept() and answers no build until another client connects; an honest build that
    finished meanwhile waited for its timeout (here 40 s, FIB_BUILD_TIMEOUT 900 s by default)."""
    res = {}
    honest = make_solution("honest_slow_build3", SLOW_HONEST.replace("__S__", "4"), lab.definition)
    t = threading.Thread(target=lambda: res.setdefault("v", build(honest, lab.definition, tmp_path / "vcache", timeout_s=40)))
    t.start()
    time.sleep(1.5)
    a = build(lab.solution("build_zygote_epoll", SECONDS=1, LOW=1, ABOVE=0), lab.definition, tmp_path / "acache",
              timeout_s=40)
    t.join(120)
    v = res["v"]
    assert v.status == OK, (v.status, v.message, a.status, a.message)


def test_an_honest_slow_build_beside_an_honest_build_is_ok(lab: Lab, running_zygote, tmp_path: Path) -> None:
    """The control of the test above: the same two builds, the second honest."""
    res = {}
    honest = make_solution("honest_slow_build2", SLOW_HONEST.replace("__S__", "6"), lab.definition)
    t = threading.Thread(target=lambda: res.setdefault("v", build(honest, lab.definition, tmp_path / "vcache")))
    t.start()
    time.sleep(2.0)
    other = make_solution("honest_other", SLOW_HONEST.replace("__S__", "1"), lab.definition)
    assert build(other, lab.definition, tmp_path / "ocache").status == OK
    t.join(120)
    assert res["v"].status == OK, (res["v"].status, res["v"].message)


def test_a_deep_info_value_is_the_solutions_compile_error(lab: Lab, tmp_path: Path) -> None:
    """`build_info_deep` at every depth around the parser's limit: the report parses, an allowed
    `info` key (`note`) carries the nesting into the manifest, and writing or re-reading the
    manifest raised RecursionError out of `build()`. No depth may raise."""
    import inspect

    # the window is a few levels wide and sits where the caller's stack plus the nesting meets the
    # recursion limit (989 from a script's top level on this VM)
    here = len(inspect.stack())
    raised = []
    for depth in range(975 - here, 1000 - here):
        sol = lab.solution("build_info_deep", DEPTH=depth)
        try:
            r = build(sol, lab.definition, tmp_path / "cache")
        except RecursionError as e:
            raised.append((depth, str(e)[:80]))
            continue
        assert r.status in (OK, COMPILE_ERROR), (depth, r.status, r.message)
    assert not raised, f"build() raised at depths {raised}"


@pytest.mark.parametrize("mounts", ["1", "0"], ids=["mount namespace", "no mount namespace (as with a GPU)"])
def test_a_build_cannot_hard_link_files_from_outside(lab: Lab, unchanged, tmp_path: Path, mounts: str) -> None:
    victim = tmp_path / "victim_grp.json"
    victim.write_text(json.dumps({"child_paths": {"a": "/somewhere/else"}}))
    before = victim.read_text()
    art_before = tree_digest(Path(lab.good_build["artifact_dir"]))
    with env_vars({"FIB_SANDBOX_RO_MOUNTS": mounts}):
        r = build(lab.solution("build_hardlink_out", GRP_VICTIM=victim, targets={"mounts": mounts}), lab.definition,
                  tmp_path / "cache")
    log = r.log or ""
    report = next((ln for ln in log.splitlines() if "HARDLINK REPORT" in ln), "")
    assert report, (r.status, log[-1500:])
    assert "LINKED" not in report, report
    assert victim.read_text() == before
    assert tree_digest(Path(lab.good_build["artifact_dir"])) == art_before
    if r.status == OK:
        for p in Path(r.artifact_dir).rglob("*"):
            if p.is_file():
                assert os.stat(p).st_nlink == 1, f"{p} is a hard link"


RELATIVE_WRITE = "open('made_at_build.txt', 'w').write('x')  # an honest build writing next to itself\n" + GOOD_VR


def test_a_build_may_write_relative_paths_in_its_directory(lab: Lab, tmp_path: Path) -> None:
    """Seen by red team 7: inside the build's read-only mount namespace its working directory
    still named the directory under its own bind mount, and a relative write failed with EROFS
    ("Read-only file system"), an honest build's COMPILE_ERROR."""
    r = build(make_solution("relative_write", RELATIVE_WRITE, lab.definition), lab.definition, tmp_path / "cache")
    assert r.status == OK, (r.status, r.message, (r.log or "")[-800:])
