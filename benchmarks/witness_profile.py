"""Where a witness round's time goes inside the runners, in one process (issue 15: its share).

    python benchmarks/witness_profile.py [--dataset shared/anchor-dataset] [--definition NAME]
                                         [--solution NAME] [--workload I] [--device cuda:0] [--rounds 5]

Evaluates one (solution, workload) in this process (a runner's state, unconfined), then runs the
witness's runner-side steps as the supervisor would ask for them (`inputs` with the reference's
outputs, `run`, `check`) `--rounds` times on fresh seeds, moving the files as the supervisor does,
and prints each step's wall ms, then a cProfile of the check steps (cumulative, top 25). The
supervisor's own steps and the messages between the processes are not in it: the traces'
`witness.parts_ms` has those.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default=str(REPO / "shared" / "anchor-dataset"))
    ap.add_argument("--definition", default=None)
    ap.add_argument("--solution", default=None)
    ap.add_argument("--workload", type=int, default=0)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--k", type=int, default=4)
    args = ap.parse_args()

    import torch

    from flashinfer_bench.bench.client import request_for
    from flashinfer_bench.bench.config import EvalConfig
    from flashinfer_bench.bench.evaluate import EvalRun, RunnerState
    from flashinfer_bench.bench.loader import build_solution
    from flashinfer_bench.bench.sandbox import witness
    from flashinfer_bench.data import TraceSet

    ts = TraceSet.from_path(args.dataset)
    dname = args.definition or sorted(ts.definitions)[0]
    d = ts.definitions[dname]
    sols = ts.solutions_for(dname)
    sol = next(s for s in sols if s.name == args.solution) if args.solution else sols[0]
    wl = ts.workloads_for(dname)[args.workload].workload
    tmp = Path(tempfile.mkdtemp(prefix="fib-witness-profile-"))
    build = build_solution(sol, d, tmp / "cache")
    base = request_for(d, sol, wl, build, EvalConfig(device=args.device, max_time_s=0.1), args.dataset)
    req = {k: base[k] for k in ("definition", "workload", "build", "config")}
    req.update(seed=12345, dataset_root=base.get("dataset_root"))
    ref_req = {k: v for k, v in req.items() if k != "build"}
    scratch = tmp / "scratch"
    scratch.mkdir()
    os.environ["FIB_SANDBOX_SCRATCH"] = str(scratch)
    dev = torch.device(args.device)
    sol_state, ref_state = RunnerState(dev, None, tmp / "cache"), RunnerState(dev, None, tmp / "cache")
    res = EvalRun(sol_state, req).run()
    print(f"{dname} / {sol.name} / {wl.axes}: evaluation {res['status']}")
    witness.prepare(sol_state, req, "solution")
    prof = cProfile.Profile()
    print("| round | inputs+reference ms | run ms (load/calls/sync/save) | check ms |")
    print("|---|---|---|---|")
    for i in range(args.rounds):
        seed = int.from_bytes(os.urandom(8), "big") >> 2
        for n in ("fr", "fs"):
            (scratch / n).mkdir()
        t0 = time.perf_counter()
        made = witness.inputs(ref_state, ref_req, seed, args.k, "fr")
        t1 = time.perf_counter()
        shutil.copy(scratch / "fr" / "inputs.bin", scratch / "fs" / "inputs.bin")
        t2 = time.perf_counter()
        ran = witness.run(sol_state, made["inputs"], "fs")
        t3 = time.perf_counter()
        shutil.copy(scratch / "fs" / "outputs.bin", scratch / "fr" / "outputs.bin")
        t4 = time.perf_counter()
        if i:
            prof.enable()
        verdict = witness.check(ref_state, ref_req, seed, ran["calls"], "fr")
        prof.disable()
        t5 = time.perf_counter()
        parts = "/".join(f"{v:.2f}" for v in ran["parts_ms"].values())
        print(f"| {i} | {(t1 - t0) * 1e3:.2f} | {(t3 - t2) * 1e3:.2f} ({parts}) | {(t5 - t4) * 1e3:.2f} |"
              + (f" bad: {verdict['bad']}" if verdict.get("bad") else ""))
        for n in ("fr", "fs"):
            shutil.rmtree(scratch / n)
    print(f"\ncheck steps after the first ({args.rounds - 1}), cumulative:")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
