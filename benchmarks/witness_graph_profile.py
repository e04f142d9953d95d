"""Where the GPU's device-time round (sandbox/witness_graph.py) spends its time, and what it
estimates for honest kernels, in one process (issue 15: the witness's share and resolution).

    python benchmarks/witness_graph_profile.py [--dataset shared/anchor-dataset] [--device cuda:0]
                                               [--rounds 5] [--per-def 3] [--profile]

Evaluates each (solution, workload) of the dataset in this process (a runner's state,
unconfined), then runs the round's runner-side steps as the supervisor asks for them: the null
(`stage`/`touch`/`go` without the call) in a second state, `expect` (the checked call's inputs and
reference outputs), the solution's `stage`, `touch`+`go` `--rounds` times, `save`, the file moved
as the supervisor does, `check`. Prints per job: the claim, k x m, the estimate ((go - null) / n)
and its ratio to the claim, what a 3.5x forged claim's bound would be, and each step's ms. With
`--profile` a cProfile of `save` + `check` (cumulative, top 25). No sockets: the traces'
`witness.parts_ms` has the exchanges' own cost.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1e3


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default=str(REPO / "shared" / "anchor-dataset"))
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-def", type=int, default=3, help="solutions per definition")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()

    import torch

    from flashinfer_bench.bench.client import request_for
    from flashinfer_bench.bench.config import EvalConfig
    from flashinfer_bench.bench.evaluate import EvalRun, RunnerState
    from flashinfer_bench.bench import timing
    from flashinfer_bench.bench.loader import build_solution
    from flashinfer_bench.bench.sandbox import witness, witness_graph as wg
    from flashinfer_bench.data import TraceSet

    ts = TraceSet.from_path(args.dataset)
    tmp = Path(tempfile.mkdtemp(prefix="fib-wg-profile-"))
    scratch = tmp / "scratch"
    scratch.mkdir()
    os.environ["FIB_SANDBOX_SCRATCH"] = str(scratch)
    dev = torch.device(args.device)
    sol_state, ref_state = RunnerState(dev, None, tmp / "cache"), RunnerState(dev, None, tmp / "cache")
    from flashinfer_bench.bench.sandbox.supervise import LAUNCH_FLOOR_FACTOR

    min_kernel = (sol_state.calibration or {}).get("min_kernel_ms") or 0.0
    again = timing.min_kernel_ms(sol_state.sampler, dev) or 0.0
    print(f"min kernel (1-element add, the runner's calibration): {min_kernel * 1e3:.2f} us "
          f"(again here: {again * 1e3:.2f} us); empty event pair {sol_state.event_overhead_ms * 1e3:.2f} us")
    prof = cProfile.Profile()
    print("| solution | workload | claim us | k x m | est us | est/claim | bound us | 3.5x forged bound us | "
          "capture ms | go ms (med) | null go ms | expect ms | save ms | check ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for dname in sorted(ts.definitions):
        d = ts.definitions[dname]
        for sol in ts.solutions_for(dname)[: args.per_def]:
            build = build_solution(sol, d, tmp / "cache")
            for wl in (w.workload for w in ts.workloads_for(dname)):
                base = request_for(d, sol, wl, build, EvalConfig(device=args.device, max_time_s=0.1), args.dataset)
                req = {key: base[key] for key in ("definition", "workload", "build", "config")}
                req.update(seed=12345, dataset_root=base.get("dataset_root"))
                ref_req = {key: v for key, v in req.items() if key != "build"}
                res = EvalRun(sol_state, req).run()
                lat = (res.get("performance") or {}).get("latency_ms")
                if res.get("status") != "PASSED" or not lat:
                    print(f"| {sol.name} | {wl.axes} | {res.get('status')} |")
                    continue
                out_bytes = witness._call_bytes(req, inputs=False)
                k, m = wg._k(float(lat), out_bytes)
                n = k * m
                if (out_bytes or 0) > wg.HANDOVER_BYTES:
                    print(f"| {sol.name} | {wl.axes} | {lat * 1e3:.2f} | outputs over the round's bytes |")
                    continue
                # the null, in the reference runner's state
                witness.prepare(ref_state, ref_req, "null")
                wg.stage(ref_state, k, m)
                nulls = []
                for r in range(args.rounds):
                    wg.touch(ref_state)
                    t0 = time.perf_counter()
                    wg.go(ref_state, 1 + r, 1)
                    nulls.append(_ms(t0))
                # the checked call's inputs and reference outputs, then the solution's capture
                seed, key = int.from_bytes(os.urandom(8), "big") >> 2, int.from_bytes(os.urandom(4), "big")
                call = [int.from_bytes(os.urandom(4), "big") % n]
                t0 = time.perf_counter()
                wg.expect(ref_state, ref_req, seed, k, call)
                expect_ms = _ms(t0)
                witness.prepare(sol_state, req, "solution")
                t0 = time.perf_counter()
                st = wg.stage(sol_state, k, m)
                cap = _ms(t0)
                if not st.get("graph"):
                    print(f"| {sol.name} | {wl.axes} | {lat * 1e3:.2f} | not captured: {str(st.get('why'))[-120:]} |")
                    continue
                gos = []
                digests = []
                for r in range(args.rounds):
                    wg.touch(sol_state)
                    t0 = time.perf_counter()
                    digests = wg.go(sol_state, seed if r == args.rounds - 1 else seed + 1 + r, key)["digests"]
                    gos.append(_ms(t0))
                for f in ("fr", "fs"):
                    (scratch / f).mkdir()
                if args.profile:
                    prof.enable()
                t0 = time.perf_counter()
                saved = wg.save(sol_state, call, "fs")["calls"]
                save_ms = _ms(t0)
                shutil.copy(scratch / "fs" / "outputs.bin", scratch / "fr" / "outputs.bin")
                t0 = time.perf_counter()
                verdict = wg.check(ref_state, ref_req, seed, key, k, call, [digests[c] for c in call], saved, "fr")
                check_ms = _ms(t0)
                prof.disable()
                for f in ("fr", "fs"):
                    shutil.rmtree(scratch / f)
                est = (min(gos) - min(nulls)) / n
                noise = max(wg.NOISE_MS, wg.NOISE_SHARE * min(nulls)) / n
                bound = wg.SLACK * lat + wg.ABS_MS + noise
                forged = lat / 3.5
                fbound = wg.SLACK * forged + wg.ABS_MS + noise
                ratios.append(est / lat)
                verdict_forged = (" launch floor" if forged < LAUNCH_FLOOR_FACTOR * min_kernel else
                                  " CAUGHT" if est > fbound else " PASSES")
                bad = "; ".join(verdict.get("bad") or [])
                print(f"| {sol.name} | {wl.axes} | {lat * 1e3:.2f} | {k}x{m} | {est * 1e3:.2f} | {est / lat:.2f} | "
                      f"{bound * 1e3:.2f} | {fbound * 1e3:.2f}{verdict_forged} | {cap:.1f} | "
                      f"{statistics.median(gos):.2f} | {min(nulls):.2f} | {expect_ms:.1f} | {save_ms:.1f} | {check_ms:.1f} |"
                      + (f" BAD: {bad[:200]}" if bad else ""))
                sol_state._witness_graph = None
                ref_state._witness_graph = None
                torch.cuda.empty_cache()
    if ratios:
        print(f"\nest / claim over {len(ratios)} jobs: min {min(ratios):.2f} median {statistics.median(ratios):.2f} "
              f"max {max(ratios):.2f}")
    if args.profile:
        print("\nsave + check, cumulative:")
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
