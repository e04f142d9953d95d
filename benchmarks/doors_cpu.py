"""Both doors on the same dataset (issue 16): `flashinfer-bench run` against the seeds'
`Benchmark(TraceSet.from_path(...), BenchmarkConfig(...)).run_all()`, cold, same machine.

    python benchmarks/doors_cpu.py [--dataset dataset] [--device cpu]

Each door gets a fresh copy of the dataset (no traces), its own empty artifact cache and its own
worker directory. Prints wall seconds, traces saved, statuses, and skipped pairs of each door.
Goal: run_all within 1.5x of `run`, the same pairs evaluated and skipped.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def saved(ds: Path) -> Counter:
    c: Counter = Counter()
    for f in (ds / "traces").rglob("*.jsonl"):
        for line in f.read_text().splitlines():
            if line.strip():
                c[json.loads(line)["evaluation"]["status"]] += 1
    return c


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", type=Path, default=REPO / "dataset")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fib-doors-"))
    rows = []
    # the pipeline's door
    ds = tmp / "run" / "ds"
    shutil.copytree(args.dataset, ds, ignore=shutil.ignore_patterns("traces"))
    env = {**os.environ, "FIB_CACHE_PATH": str(tmp / "run" / "cache"), "FIB_WORKER_DIR": str(tmp / "run" / "w")}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "flashinfer_bench", "run", "--local", str(ds), "--device", args.device,
                        "--results", str(tmp / "run" / "results")], env=env, capture_output=True, text=True)
    wall_run = time.perf_counter() - t0
    notes = tmp / "run" / "results" / "plan" / "notes.json"
    skipped_run = len(json.loads(notes.read_text())["skipped"]) if notes.exists() else -1
    rows.append(("flashinfer-bench run", wall_run, dict(saved(ds)), skipped_run, p.returncode))
    # the Python API's door, in a fresh process with its own cache and worker directory
    ds2 = tmp / "api" / "ds"
    shutil.copytree(args.dataset, ds2, ignore=shutil.ignore_patterns("traces"))
    code = (
        "import sys, json\n"
        "from flashinfer_bench import Benchmark, BenchmarkConfig, TraceSet\n"
        f"b = Benchmark(TraceSet.from_path({str(ds2)!r}), BenchmarkConfig(device={args.device!r}, "
        f"cache_dir={str(tmp / 'api' / 'cache')!r}, worker_dir={str(tmp / 'api' / 'w')!r}))\n"
        "b.run_all()\n"
        "print('SKIPPED', len(b.skipped), 'CHARGED', len(b.charged_failures))\n"
    )
    t0 = time.perf_counter()
    q = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    wall_api = time.perf_counter() - t0
    line = next((x for x in q.stdout.splitlines() if x.startswith("SKIPPED")), "SKIPPED -1")
    rows.append(("Benchmark(...).run_all()", wall_api, dict(saved(ds2)), int(line.split()[1]), q.returncode))
    print(f"\n{'door':28s} {'wall s':>8s}  {'skipped':>7s}  rc  traces saved by status")
    for name, wall, st, sk, rc in rows:
        print(f"{name:28s} {wall:8.1f}  {sk:7d}  {rc:2d}  {st}")
    print(f"\nrun_all / run: {wall_api / wall_run:.2f}x (goal <= 1.5)")
    if q.returncode:
        print(q.stderr[-2000:])


if __name__ == "__main__":
    main()
