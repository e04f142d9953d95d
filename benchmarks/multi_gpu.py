"""Several GPUs of one box (issue 7): throughput with 2 GPUs vs 1, and no overlapping measurements.

    python benchmarks/multi_gpu.py [--anchor shared/anchor-dataset] [--batches 60]

Builds a dataset from the anchor definitions and solutions with many workloads, runs the pipeline
(`flashinfer-bench run`) once with --gpus 1 and once with --gpus N (all visible GPUs), each on a
fresh results dir with the artifact cache warm, and reports wall time, evaluations per second over
the benchmark phase (first evaluation start to last end, from the traces), the speedup, which GPU
each trace ran on, and whether two measurements ever overlapped on one GPU (from the traces'
environment start/end times and gpu uuid/device index).
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
from collections import defaultdict
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.pipeline_gpu import synthetic  # noqa: E402


def ts(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def traces(ds: Path):
    out = []
    for f in (ds / "traces").rglob("*.jsonl"):
        out += [json.loads(l) for l in f.read_text().splitlines() if l.strip()]
    return out


def analyse(tr):
    by_gpu = defaultdict(list)
    for t in tr:
        env = t["evaluation"]["environment"]
        if "start_time" not in env or "end_time" not in env:
            continue
        gpu = env.get("gpu_uuid") or env.get("device_index") or env.get("device")
        by_gpu[str(gpu)].append((ts(env["start_time"]), ts(env["end_time"]), t["solution"], t["workload"]["uuid"]))
    overlaps = 0
    for gpu, iv in by_gpu.items():
        iv.sort()
        for a, b in zip(iv, iv[1:]):
            if b[0] < a[1] - 1e-3:
                overlaps += 1
    starts = [s for iv in by_gpu.values() for s, *_ in iv]
    ends = [e for iv in by_gpu.values() for _, e, *_ in iv]
    span = (max(ends) - min(starts)) if starts else float("nan")
    return {g: len(v) for g, v in by_gpu.items()}, overlaps, span


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--anchor", type=Path, default=REPO / "shared/anchor-dataset")
    ap.add_argument("--batches", type=int, default=60)
    args = ap.parse_args()
    import torch

    n = torch.cuda.device_count()
    print(f"{n} GPUs: {[torch.cuda.get_device_name(i) for i in range(n)]}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="fib-mgpu-"))
    batches = sorted({max(1, int(round(1.13 ** i))) for i in range(200)})[: args.batches]
    base = tmp / "base"
    synthetic(args.anchor, base, batches)
    env = {**os.environ, "FIB_CACHE_PATH": str(tmp / "cache")}
    rows = []
    for gpus, lookahead in ((1, 1), (n, 0), (n, 1)):
        tag = f"{gpus}-la{lookahead}"
        ds = tmp / f"ds{tag}"
        shutil.copytree(base, ds)
        work = tmp / f"w{tag}"
        work.mkdir()
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "flashinfer_bench", "run", "--local", str(ds), "--device", "cuda",
                            "--gpus", str(gpus), "--gpu-lookahead", str(lookahead), "--results", str(work / "results")],
                           cwd=work, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        (Path(os.environ.get("OUT", "/tmp")) / f"multigpu-run-{tag}.log").write_text(p.stdout + p.stderr)
        if p.returncode != 0:
            print(p.stdout[-2000:], p.stderr[-4000:])
        tr = traces(ds)
        per_gpu, overlaps, span = analyse(tr)
        passed = sum(t["evaluation"]["status"] == "PASSED" for t in tr)
        rows.append((gpus, wall, len(tr), passed, span, per_gpu, overlaps))
        print(f"gpus={gpus} lookahead={lookahead}: {len(tr)} traces ({passed} PASSED) in {wall:.1f} s; per GPU {per_gpu}; overlaps {overlaps}", flush=True)
    print(f"\n{'GPUs':>4s} {'wall s':>8s} {'traces':>7s} {'bench phase s':>13s} {'evals/s':>8s} {'overlaps':>8s}  per GPU")
    for gpus, wall, ntr, passed, span, per_gpu, overlaps in rows:
        print(f"{gpus:4d} {wall:8.1f} {ntr:7d} {span:13.1f} {ntr / span:8.2f} {overlaps:8d}  {per_gpu}")
    if len(rows) == 3:
        (g1, w1, n1, _, s1, _, _) = rows[0]
        for label, (g2, w2, n2, _, s2, _, _) in zip(("look-ahead 0", "look-ahead 1"), rows[1:]):
            print(f"\nthroughput {g2} GPUs ({label}) / 1 GPU: whole run {w1 / w2:.2f}x, benchmark phase {(n2 / s2) / (n1 / s1):.2f}x (goal >= 1.8)")


if __name__ == "__main__":
    main()
