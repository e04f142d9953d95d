"""Where an evaluation's timing phase goes (issue 19): samples, warm-up, wall, per-sample cost.

    python benchmarks/timing_profile.py [--anchor shared/anchor-dataset] [--batches 1 64 100]

Evaluates the anchor solutions through the worker (the pipeline's path) under a few evaluation
settings and prints, per evaluation, the timing statistics the trace records (samples, warm-up
calls, timing wall, converged, rel. IQR, latency), then the cost of one sample of the CUDA
sampler measured in-process with an empty call (flush, gate, events, sync).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from flashinfer_bench.bench.client import evaluate_via_worker, shutdown_worker  # noqa: E402
from flashinfer_bench.bench.config import EvalConfig  # noqa: E402
from flashinfer_bench.bench.loader import build_solution  # noqa: E402
from flashinfer_bench.data import TraceSet  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--anchor", type=Path, default=REPO / "shared/anchor-dataset")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 64, 100])
    ap.add_argument("--settings", default='[{}, {"target_rel_ci": 0.01}, {"target_rel_ci": 0.01, "warmup_max_s": 0.02}]')
    args = ap.parse_args()
    ts = TraceSet.from_path(str(args.anchor))
    tmp = Path(tempfile.mkdtemp(prefix="fib-tprof-"))
    base = EvalConfig(device="cuda:0", worker_dir=str(tmp / "w"), cache_dir=str(tmp / "cache"))
    print(f"{'settings':44s} {'solution':28s} {'batch':>5s} {'lat us':>8s} {'n':>5s} {'warm':>5s} "
          f"{'t_wall ms':>9s} {'conv':>4s} {'relIQR%':>7s} {'eval ms':>8s} {'ref n':>5s}")
    for over in json.loads(args.settings):
        cfg = base.model_copy(update=over)
        for dname, definition in ts.definitions.items():
            wl0 = ts.workloads[dname][0].workload
            axis = next(iter(wl0.axes))
            for sol in ts.solutions.get(dname, []):
                build = build_solution(sol, definition, Path(cfg.cache_dir))
                for b in args.batches:
                    wl = wl0.model_copy(update={"axes": {**wl0.axes, axis: b}, "uuid": f"{dname}_p{b}_{len(over)}"})
                    t0 = time.perf_counter()
                    t = evaluate_via_worker(definition, sol, wl, build, cfg)
                    wall = (time.perf_counter() - t0) * 1e3
                    ev = t.evaluation
                    ex = (ev.correctness.extra if ev.correctness else None) or {}
                    lat = ev.performance.latency_ms * 1e3 if ev.performance else float("nan")
                    print(f"{json.dumps(over):44s} {sol.name:28s} {b:5d} {lat:8.2f} {ex.get('samples', 0):5d} "
                          f"{ex.get('warmup_calls', 0):5d} {ex.get('timing_wall_s', 0) * 1e3:9.1f} "
                          f"{'y' if ex.get('converged') else 'n':>4s} {ex.get('rel_iqr', 0) * 100:7.2f} {wall:8.1f} "
                          f"{ex.get('reference_samples', 0):5d}  {ev.status.value} {ex.get('phase_s')}", flush=True)
    shutdown_worker("cuda:0", base)
    sampler_cost()


def sampler_cost() -> None:
    """One sample of the CUDA sampler with an empty call, and its parts."""
    import torch

    from flashinfer_bench.bench import timing

    dev = torch.device("cuda:0")
    s = timing.CudaSampler(dev)
    x = torch.ones(1024, device=dev)
    noop = lambda: x.add_(0)  # noqa: E731
    prep = lambda: ()  # noqa: E731

    def per_call(f, n=400) -> float:
        for _ in range(20):
            f()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n * 1e6

    print("\nsampler parts, us per call (host wall, GPU work included where it syncs)")
    print(f"  full sample, empty kernel   {per_call(lambda: s.run(noop, prep, None)):8.1f}  (gate now {s.gate_us:.0f} us)")
    print(f"  torch.cuda.synchronize      {per_call(timing._cuda_sync):8.1f}")
    print(f"  L2 persisting reset         {per_call(s.l2.reset):8.1f}")
    print(f"  flush (enqueue only)        {per_call(s.flush):8.1f}")
    print(f"  flush + sync                {per_call(lambda: (s.flush(), timing._cuda_sync())):8.1f}")
    print(f"  sleep 20us + sync           {per_call(lambda: (timing._sleep(int(20 * s.cycles_per_us)), timing._cuda_sync())):8.1f}")
    print(f"  empty kernel + sync         {per_call(lambda: (noop(), timing._cuda_sync())):8.1f}")


if __name__ == "__main__":
    main()
