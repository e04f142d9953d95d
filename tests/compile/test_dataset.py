"""Every solution shipped in dataset/ builds here (CUDA: compiles; torch binding with a CPU
torch, and TileLang without tilelang: SKIPPED with the reason), and those that can
run here match their reference on a small input."""
from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from flashinfer_bench.compile import COMPILE_ERROR, OK, SKIPPED, build, load_runnable
from flashinfer_bench.compile.check import check_against_reference, smallest_workload
from flashinfer_bench.data import TraceSet


@pytest.mark.slow
def test_every_dataset_solution_builds(example_dataset, tmp_path):
    """Runs in a fresh interpreter: Triton's interpreter mode is process-global state that other
    tests in this pytest process may already have fixed the other way."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, __file__, str(example_dataset), str(tmp_path)], capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]


def _check_dataset(example_dataset: Path, tmp_path: Path) -> None:
    ts = TraceSet.from_path(example_dataset)
    solutions = ts.all_solutions()
    assert solutions, "dataset/ has no solutions"
    device = "cuda" if torch.cuda.is_available() else "cpu"
    failures = []
    for s in solutions:
        assert ts.get_definition(s.definition) is not None, f"{s.name}: no definition {s.definition}"
    # Each build runs in its own child process (torch import, nvcc, Triton warm-up): two at a time,
    # while this process checks the finished ones against their reference in the given order.
    with ThreadPoolExecutor(2) as pool:
        builds = [pool.submit(build, s, ts.get_definition(s.definition), tmp_path / "cache") for s in solutions]
        for s, fut in zip(solutions, builds):
            d = ts.get_definition(s.definition)
            r = fut.result()
            lang = s.spec.language.value
            if r.status == SKIPPED:
                if lang == "tilelang" and importlib.util.find_spec("tilelang") is None:
                    assert "tilelang is not installed here: pip install" in r.message
                    continue
                assert s.spec.effective_binding == "torch" and torch.version.cuda is None, r.message
                continue
            if r.status == COMPILE_ERROR:
                failures.append(f"{s.name}: {r.message}")
                continue
            assert r.status == OK, r.message
            if not r.loadable_here:
                continue
            axes, scalars = smallest_workload(ts, d)
            try:
                check = check_against_reference(load_runnable(Path(r.artifact_dir), d), d, axes, scalars, device)
            except Exception as e:  # noqa: BLE001 - report every solution, not the first that raises
                failures.append(f"{s.name}: raised {type(e).__name__}: {e}")
                continue
            if not check.ok:
                failures.append(f"{s.name}: {check.problems}")
    assert not failures, "\n".join(failures)


if __name__ == "__main__":
    import sys

    _check_dataset(Path(sys.argv[1]), Path(sys.argv[2]))
