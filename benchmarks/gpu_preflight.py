"""One evaluation through the worker on the GPU: does a (confined) runner start and measure?

    python benchmarks/gpu_preflight.py [--dataset shared/anchor-dataset]
Prints the status, the sandbox layers the runner applied and the first lines of a failure log;
exit 0 when PASSED.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from flashinfer_bench.bench.client import evaluate_via_worker, shutdown_worker
from flashinfer_bench.bench.config import EvalConfig
from flashinfer_bench.compile import build
from flashinfer_bench.data import TraceSet


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="shared/anchor-dataset")
    args = ap.parse_args()
    ts = TraceSet.from_path(args.dataset)
    d = ts.definitions["rmsnorm_d4096"]
    sol = ts.get_solution("rmsnorm_triton_row")
    wl = [w for w in ts.workloads_for(d.name) if w.workload.axes.get("batch_size") == 2048][0].workload
    cfg = EvalConfig(device="cuda:0")
    b = build(sol, d)
    t = evaluate_via_worker(d, sol, wl, b, cfg, Path(args.dataset), device="cuda:0")
    ev = t.evaluation
    env = ev.environment.model_dump()
    print("status", ev.status.value, "sandbox", env.get("sandbox"), "latency_ms", ev.latency_ms)
    if ev.status != "PASSED":
        print("\n".join(ev.log.splitlines()[:40]))
    shutdown_worker("cuda:0", cfg)
    return 0 if ev.status == "PASSED" else 1


if __name__ == "__main__":
    sys.exit(main())
