"""A runner parked for a solution is reused only where it may read the solution's build.

CI failure (2026-11-23): one worker serves several datasets, each with its own build cache. The
same solution (same content, so the same build hash) built into a second cache met the runner
parked for it while the first dataset ran; that runner's sandbox could read only the first cache,
so the solution "failed to load" (RUNTIME_ERROR) although its build was fine.
"""
from __future__ import annotations

from pathlib import Path

from flashinfer_bench.bench.client import evaluate_via_worker, shutdown_worker
from flashinfer_bench.bench.loader import _shim_build

from .conftest import GOOD_VR, make_solution, rms_workload


def test_parked_runner_that_cannot_read_this_build_is_not_reused(rms_def, cpu_config, tmp_path: Path) -> None:
    cfg = cpu_config.model_copy(update={"worker_dir": str(tmp_path / "w"), "cache_dir": str(tmp_path / "own")})
    wl = rms_workload(8, uuid="parked_b8")
    first = make_solution("parked_first", GOOD_VR + "\n# first\n", rms_def)
    second = make_solution("parked_second", GOOD_VR + "\n# second\n", rms_def)
    try:
        statuses = []
        # dataset X, twice: the second time, `first`'s runner is parked (its sandbox reads cache X)
        # dataset Y: the same two solutions from cache Y; `first` again meets its parked runner
        order = [("x", first), ("x", second)] * 2 + [("y", first), ("y", second), ("y", first)]
        for cache, sol in order:
            build = _shim_build(sol, tmp_path / cache)
            t = evaluate_via_worker(rms_def, sol, wl, build, cfg)
            statuses.append((cache, sol.name, t.evaluation.status.value, t.evaluation.log[-300:]))
    finally:
        shutdown_worker("cpu", cfg)
    failed = [s for s in statuses if s[2] != "PASSED"]
    assert not failed, failed
