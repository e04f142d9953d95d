"""Issue 17: a failure that is the dataset's (its reference raises or cannot be imported) is never
a solution's trace. Through `flashinfer-bench run --device cpu`: the other definitions are
benchmarked and saved, the broken one's evaluations are listed as dataset errors, nothing of
them is written into the dataset, and the run exits 3."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .harness import SHARED_WORKERS, TORCH_VALUE, definition, solution, workload_line, write_dataset

pytestmark = pytest.mark.slow

BROKEN = {
    "rms_raises": "def run(x, weight, eps):\n    raise ValueError('a bug in the reference')\n",
    "rms_no_import": "import not_a_module_anywhere\n\ndef run(x, weight, eps):\n    return x\n",
}


def test_reference_failures_are_the_datasets(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path, batches=(1, 4))
    for name, ref in BROKEN.items():
        (ds / f"definitions/rmsnorm/{name}.json").write_text(json.dumps(definition(name, reference=ref)))
        sdir = ds / f"solutions/tests/rmsnorm/{name}"
        sdir.mkdir(parents=True)
        (sdir / "ok.json").write_text(json.dumps(solution(f"{name}_ok", TORCH_VALUE, False, definition=name)))
        (ds / f"workloads/rmsnorm/{name}.jsonl").write_text(workload_line(name, 2))
    env = {**os.environ, "FIB_CACHE_PATH": str(tmp_path / "cache"), "FIB_WORKER_DIR": str(SHARED_WORKERS)}
    p = subprocess.run(
        [sys.executable, "-m", "flashinfer_bench", "run", "--local", str(ds), "--device", "cpu",
         "--results", str(tmp_path / "results")],
        capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path,
    )
    out = p.stdout + p.stderr
    assert p.returncode == 3, out[-3000:]
    saved = {json.loads(line)["definition"] for f in (ds / "traces").rglob("*.jsonl") for line in f.read_text().splitlines()}
    assert "rms_h256" in saved  # the good definition was benchmarked and saved
    assert not saved & set(BROKEN), saved  # nothing charged to the broken definitions' solutions
    for name in BROKEN:
        assert f"error: {name} / {name}_ok" in out, out[-3000:]
    assert "a bug in the reference" in out and "not_a_module_anywhere" in out
    assert out.count("dataset error (not the solution's)") >= 2
