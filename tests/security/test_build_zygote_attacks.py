"""Red team, part five: a build forked by the build zygote (FIB_BUILD_ZYGOTE=1, the pipeline's
default) against the zygote's connection to its trusted parent (session 23).

The forked child keeps that connection open (should the zygote die, the parent must see the end
only once the child has exited), so the solution's module body can write on it: a reply of the
wrong shape raised out of `build()` (the pipeline's compile job died), and an early `{"rc": 0}`
let the parent sanitize and publish while the child still ran and planted a symlink.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from flashinfer_bench.compile import COMPILE_ERROR, build

from .conftest import Lab


@pytest.mark.parametrize("payload", ['\'{"rc": "x"}\'', '\'{"rc": null}\'', "'[' * 100000", '\'{"rc": 1e999}\'',
                                     '\'{"rc": 0}\''], ids=["rc text", "rc null", "deep", "rc inf", "rc 0 early"])
def test_a_build_cannot_answer_for_the_zygote(lab: Lab, running_zygote, tmp_path: Path, payload: str) -> None:
    sol = lab.solution("build_zygote_reply", PAYLOAD=payload)
    r = build(sol, lab.definition, tmp_path / "cache")
    assert "wrote" in (r.log or ""), (r.log or "")[-1500:]  # it did write on the connection
    assert r.status == COMPILE_ERROR and "answering for it" in r.message, (r.status, r.message)


def test_an_early_answer_does_not_publish_a_running_build(lab: Lab, running_zygote, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("the victim's own bytes\n")
    for i in range(3):  # a race the attack won 1 time in 3
        r = build(lab.solution("build_zygote_race", VICTIM=victim), lab.definition, tmp_path / f"cache{i}")
        assert r.status == COMPILE_ERROR and "answering for it" in r.message, (r.status, r.message, (r.log or "")[-1500:])
        assert victim.read_text() == "the victim's own bytes\n"
