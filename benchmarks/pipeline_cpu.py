"""CPU goals of the pipeline (issue 8): DAG construction at 10,000 jobs, no-op run of the example
dataset, and the embedded-default run of the example dataset. Prints a table.

    python benchmarks/pipeline_cpu.py [--skip-full-run] [--repeat N]

DAG construction is `snakemake -n --quiet` (parse, plan, DAG, up-to-date checks; Snakemake stops
after the job stats). The same dry run without --quiet, which `flashinfer-bench run --dry-run`
streams, also formats and prints every job (~1.5 ms a job inside Snakemake): reported beside it.
The no-op run's floor is `snakemake --version` in the same environment (imports, plugin
registries); `flashinfer-bench run` adds its own start and pre-check.
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.pipeline.harness import TORCH_VALUE, definition, solution  # noqa: E402


def synthetic_dataset(root: Path, n_defs=10, n_sols=10, n_wl=100) -> int:
    for d in range(n_defs):
        name = f"rms_{d}"
        (root / "definitions/rmsnorm").mkdir(parents=True, exist_ok=True)
        (root / f"definitions/rmsnorm/{name}.json").write_text(json.dumps(definition(name)))
        sdir = root / f"solutions/synth/rmsnorm/{name}"
        sdir.mkdir(parents=True, exist_ok=True)
        for s in range(n_sols):
            sname = f"{name}_sol{s}"
            (sdir / f"{sname}.json").write_text(json.dumps(solution(sname, TORCH_VALUE + f"# {s}\n", False, definition=name)))
        (root / "workloads/rmsnorm").mkdir(parents=True, exist_ok=True)
        with open(root / f"workloads/rmsnorm/{name}.jsonl", "w") as f:
            for w in range(n_wl):
                f.write(json.dumps({"definition": name, "workload": {"uuid": f"{name}_w{w}", "axes": {"batch_size": w + 1},
                        "inputs": {"eps": {"type": "scalar", "value": 1e-6}}}, "solution": None, "evaluation": None}) + "\n")
    return n_defs * n_sols * n_wl


def timed(cmd, cwd=None, env=None) -> float:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-3000:])
        raise SystemExit(f"failed: {' '.join(map(str, cmd))}")
    return wall


def median(xs):
    return sorted(xs)[len(xs) // 2]


def snakemake(work: Path, dataset: Path, *extra: str) -> float:
    cfg = work / "cfg.json"
    # absolute, as `flashinfer-bench run` passes it: the CLI's no-op below sees the same outputs
    cfg.write_text(json.dumps({"dataset": str(dataset), "results": str(work / "results"), "device": "cpu"}))
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
                        "--configfile", str(cfg), "--cores", "2", *extra], capture_output=True, text=True, cwd=work)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-3000:])
        raise SystemExit(f"snakemake failed ({' '.join(extra)})")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-full-run", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each short measurement (median)")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ds = tmp / "synthetic"
        n = synthetic_dataset(ds)
        w = tmp / "w_synth"
        w.mkdir()
        t = median([snakemake(w, ds, "--dry-run", "--quiet") for _ in range(args.repeat)])
        rows.append((f"DAG construction, {n} benchmark jobs (-n --quiet, median)", t, 15.0))
        t = snakemake(w, ds, "--dry-run")
        rows.append(("  same, listing every job (-n; what run --dry-run prints)", t, None))

        ex = tmp / "example"
        shutil.copytree(REPO / "dataset", ex, ignore=shutil.ignore_patterns("traces"))
        w2 = tmp / "w_example"
        w2.mkdir()
        env_cache = str(tmp / "cache")
        os.environ["FIB_CACHE_PATH"] = env_cache
        if not args.skip_full_run:
            t = snakemake(w2, ex, "--profile", str(REPO / "profiles/cpu"))
            rows.append(("embedded-default run of the example dataset (profiles/cpu)", t, 300.0))
            times = [snakemake(w2, ex, "--profile", str(REPO / "profiles/cpu")) for _ in range(args.repeat)]
            rows.append((f"no-op run of the example dataset (median of {args.repeat})", median(times), 2.0))
            cli = [sys.executable, "-m", "flashinfer_bench", "run", "--local", str(ex), "--device", "cpu",
                   "--results", str(w2 / "results"), "--cores", "2"]
            times = [timed(cli, cwd=w2) for _ in range(args.repeat)]
            rows.append(("  same through `flashinfer-bench run` (median)", median(times), None))
        floor = median([timed([sys.executable, "-m", "snakemake", "--version"]) for _ in range(args.repeat)])
        rows.append(("  floor: `snakemake --version` (median)", floor, None))
    print(f"\n{'measurement':62s} {'seconds':>9s} {'goal':>7s}  ok")
    for name, t, goal in rows:
        if goal is None:
            print(f"{name:62s} {t:9.2f} {'':>7s}")
        else:
            print(f"{name:62s} {t:9.2f} {goal:7.1f}  {'yes' if t <= goal else 'NO'}")


if __name__ == "__main__":
    main()
