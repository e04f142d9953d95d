"""Triton solutions: on CPU they build and run under TRITON_INTERPRET=1; on a GPU the build's
warm-up leaves compiled kernels in the artifact."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from flashinfer_bench.compile import COMPILE_ERROR, OK, build, load_runnable

from .helpers import TRITON_ADD, VADD, solution

REPO = Path(__file__).resolve().parents[2]
pytest.importorskip("triton")


def test_triton_solution_builds_warms_up_and_runs(cache):
    # The warm-up input is the smallest the constraints allow (and on a GPU also a multiple of 16).
    d = VADD.model_copy(update={"constraints": ["N % 8 == 0", "N >= 20"]})
    r = build(solution({"kernel.py": TRITON_ADD}, "kernel.py::run", language="triton", dps=True), d, cache)
    assert r.status == OK, r.log
    m = json.loads((Path(r.artifact_dir) / "manifest.json").read_text())
    assert m["warmup_axes"] == ([{"N": 24}, {"N": 32}] if torch.cuda.is_available() else [{"N": 24}])
    assert m["triton_backend"] == ("cuda" if torch.cuda.is_available() else "interpreter")
    assert m["toolchain"]["triton"]
    # Load and run in a fresh process, the way a benchmark worker does.
    code = textwrap.dedent(
        f"""
        import sys, os
        sys.path.insert(0, {str(REPO)!r})
        import torch
        from tests.compile.helpers import VADD
        from flashinfer_bench.compile import load_runnable
        run = load_runnable({r.artifact_dir!r}, VADD)
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        a = torch.arange(300.0, device=dev); b = torch.ones(300, device=dev)
        (c,) = run.call_value_returning(a, b)
        print(bool(torch.equal(c, a + b)), os.environ.get("TRITON_INTERPRET"), os.environ["TRITON_CACHE_DIR"])
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TRITON_CACHE_DIR")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    ok, interpret, cache_dir = out.stdout.split()
    assert ok == "True"
    assert interpret == ("None" if torch.cuda.is_available() else "1")
    assert cache_dir == str(Path(r.artifact_dir) / "triton_cache")


def test_triton_kernel_that_fails_in_the_warm_up_is_a_compile_error(cache):
    broken = TRITON_ADD.replace("tl.load(b + offs, mask=m)", "tl.load(b + offs, mask=m) + tl.undefined_fn(offs)")
    r = build(solution({"kernel.py": broken}, "kernel.py::run", language="triton", dps=True), VADD, cache)
    assert r.status == COMPILE_ERROR
    assert "warm-up" in r.message and "undefined_fn" in r.log
    assert r.message.startswith("kernel.py:9:")  # the kernel line, not the launch
    assert not (cache / "artifacts").exists() or not any((cache / "artifacts").iterdir())


@pytest.mark.gpu
def test_triton_artifact_carries_compiled_kernels(cache):
    r = build(solution({"kernel.py": TRITON_ADD}, "kernel.py::run", language="triton", dps=True), VADD, cache)
    assert r.status == OK, r.log
    cached = list((Path(r.artifact_dir) / "triton_cache").rglob("*.cubin"))
    assert cached, "the warm-up left no compiled kernel in the artifact"
    groups = list((Path(r.artifact_dir) / "triton_cache").rglob("__grp__*"))
    for g in groups:
        for p in json.loads(g.read_text())["child_paths"].values():
            assert p.startswith(r.artifact_dir) and Path(p).exists()
    files_before = sorted(p.name for p in (Path(r.artifact_dir) / "triton_cache").rglob("*"))
    run = load_runnable(Path(r.artifact_dir), VADD)
    a = torch.arange(4096.0, device="cuda")  # N % 16 == 0: the specialisation warmed with N=16
    assert torch.equal(run.call_value_returning(a, a)[0], a + a)
    files_after = sorted(p.name for p in (Path(r.artifact_dir) / "triton_cache").rglob("*"))
    assert files_after == files_before, "loading the artifact compiled the kernel again"
