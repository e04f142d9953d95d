"""What the GPU device-time round's own harness costs a call, and in which kernels (issue 15: the
noise share a forgery fits in is a share of this null round).

    python benchmarks/witness_null_profile.py [--batch 4096 --hidden 256] [--claim-us 5] [--rounds 5]

Prepares the null round (`witness_graph.stage` without the solution's call: the draws, each call's
outputs copied into its row, the keyed hash, the store) for the security tests' RMSNorm at the
given size, in this process (unconfined), replays it `--rounds` times as the supervisor's timed
`go` does and prints its ms a call; then runs the same round eagerly under torch.profiler and
prints its kernels, heaviest first (a graph replay hides them from the profiler).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--claim-us", type=float, default=5.0, help="the claim the round's k x m is sized for")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--device", default="cuda:0")
    args = ap.parse_args()

    import torch

    from flashinfer_bench.bench.config import EvalConfig
    from flashinfer_bench.bench.evaluate import RunnerState
    from flashinfer_bench.bench.sandbox import witness, witness_graph as wg
    from tests.bench.conftest import rms_definition, rms_workload

    tmp = Path(tempfile.mkdtemp(prefix="fib-null-profile-"))
    (tmp / "scratch").mkdir()
    os.environ["FIB_SANDBOX_SCRATCH"] = str(tmp / "scratch")
    dev = torch.device(args.device)
    state = RunnerState(dev, None, tmp / "cache")
    req = {"definition": rms_definition(args.hidden).model_dump(mode="json"),
           "workload": rms_workload(args.batch).model_dump(mode="json"),
           "config": EvalConfig(device=args.device).model_dump(mode="json"), "seed": 7, "dataset_root": None}
    out_bytes = witness._call_bytes(req, inputs=False)
    k, m = wg._k(args.claim_us * 1e-3, out_bytes)
    n = k * m
    witness.prepare(state, req, "null")
    eager = dev.type != "cuda"  # (a CPU runs it eagerly: this script's own check without a GPU)
    ready = wg.stage(state, k, m, eager=eager)
    assert ready.get("eager" if eager else "graph"), f"the null round was not made ready: {ready}"
    walls = []
    for r in range(args.rounds):
        wg.touch(state)
        t0 = time.perf_counter()
        wg.go(state, 1 + r, 1)
        walls.append((time.perf_counter() - t0) * 1e3)
    best = min(walls)
    print(f"null round: batch {args.batch} x hidden {args.hidden}, outputs {out_bytes / 2**20:.2f} MiB a call, "
          f"k={k} m={m} ({n} calls): fastest {best:.3f} ms of {args.rounds} = {best / n * 1e3:.2f} us a call; "
          f"noise share ({wg.NOISE_SHARE:g}) {wg.NOISE_SHARE * best / n * 1e3:.2f} us a call")

    witness.prepare(state, req, "null")
    assert wg.stage(state, k, m, eager=True).get("eager")
    wg.go(state, 99, 1)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU if eager else ProfilerActivity.CUDA]) as prof:
        wg.go(state, 100, 1)
    print(f"eager null round's kernels (one round of {n} calls; us per call):")
    rows = []
    for e in prof.key_averages():
        dt = e.self_cpu_time_total if eager else (getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0))
        if dt:
            rows.append((dt, e.count, e.key))
    total = sum(r[0] for r in rows)
    for dt, count, key in sorted(rows, reverse=True)[:15]:
        print(f"  {dt / n:8.2f} us/call  {count:6d} launches  {key[:110]}")
    print(f"  {total / n:8.2f} us/call in all (eager: each kernel's own time, no launch gaps)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
