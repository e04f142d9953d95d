#!/usr/bin/env python3
"""Measure what SLURM submission costs a Snakemake DAG, and what grouping changes.

    .venv/bin/python benchmarks/slurm_overhead.py [--n-sol 3 --n-wl 4 --bench-sleep 0] [--json out.json]

Uses the toy DAG tests/slurm_toy/Snakefile (n_sol compile -> n_sol*n_wl benchmark
(gpu=1) -> local aggregate) and profiles/slurm. If `sinfo` does not answer, the
script brings the test cluster up with .ci/slurm-up.sh and down again at the end
(--no-manage: fail instead). Prints markdown tables; numbers are in
benchmarks/slurm_overhead.md.

Measured:
  1. raw SLURM: `sbatch --wrap true` call latency; submit -> COMPLETED round trip
  2. one trivial job: local executor vs through the profile; time inside the allocation
  3. toy DAG: local executor vs SLURM ungrouped vs grouped (one / several groups)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from slurm_toy.runner import (  # noqa: E402
    TOY_SNAKEFILE,
    active_jobs,
    plugin_available,
    run_snakemake_slurm,
    show_job,
    slurm_available,
)


def sh(args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, **kw)


# ------------------------------------------------------------------ raw SLURM
def raw_sbatch(n_calls: int, n_roundtrips: int, partition: str) -> dict:
    lat, ids = [], []
    for _ in range(n_calls):
        t = time.perf_counter()
        p = sh(["sbatch", "--parsable", "-p", partition, "--mem", "100", "-o", "/dev/null", "-J", "fib-overhead", "--wrap", "true"])
        lat.append(time.perf_counter() - t)
        if p.returncode != 0:
            raise RuntimeError(f"sbatch failed: {p.stderr}")
        ids.append(p.stdout.strip().split(";")[0])
    _wait_gone(ids, 120)
    rts = []
    for _ in range(n_roundtrips):
        t = time.perf_counter()
        jid = sh(["sbatch", "--parsable", "-p", partition, "--mem", "100", "-o", "/dev/null", "-J", "fib-overhead",
                  "--wrap", "true"]).stdout.strip().split(";")[0]
        while True:
            st = sh(["squeue", "-h", "-t", "all", "-j", jid, "-o", "%T"]).stdout.strip()
            if st in ("COMPLETED", "FAILED", "CANCELLED"):
                break
            if time.perf_counter() - t > 120:
                sh(["scancel", jid])
                raise RuntimeError(f"raw job {jid} not done after 120 s ({st})")
            time.sleep(0.05)
        rts.append(time.perf_counter() - t)
    return {"sbatch_call_ms_median": 1000 * statistics.median(lat),
            "sbatch_call_ms_max": 1000 * max(lat),
            "roundtrip_s_median": statistics.median(rts),
            "roundtrip_s_min": min(rts)}


def _wait_gone(ids, timeout):
    t = time.time()
    while set(ids) & set(active_jobs()):
        if time.time() - t > timeout:
            sh(["scancel", *ids])
            raise RuntimeError("raw sbatch jobs did not finish")
        time.sleep(0.2)


# ------------------------------------------------------------------ snakemake runs
def local_run(workdir: Path, extra) -> float:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(TOY_SNAKEFILE), "--directory", str(workdir),
           "--workflow-profile", "none", "--cores", "2", "--resources", "gpu=2", "--scheduler", "greedy", *extra]
    t = time.perf_counter()
    p = sh(cmd, cwd=REPO, timeout=900)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"local run failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    return wall


def _ctld_log() -> Path | None:
    for line in sh(["scontrol", "show", "config"]).stdout.splitlines():
        if line.startswith("SlurmctldLogFile"):
            return Path(line.split("=", 1)[1].strip())
    return None


def submit_times(job_ids) -> dict:
    """ms-resolution submit timestamps from the slurmctld log (squeue only has seconds)."""
    log, want, out = _ctld_log(), set(job_ids), {}
    if not log or not log.is_file():
        return out
    for line in log.read_text(errors="replace").splitlines():
        if "_slurm_rpc_submit_batch_job: JobId=" in line:
            jid = line.split("JobId=")[1].split()[0]
            if jid in want:
                out[jid] = datetime.strptime(line[1:24], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
    return out


def slurm_run(workdir: Path, extra, env) -> dict:
    run = run_snakemake_slurm(TOY_SNAKEFILE, workdir, list(extra), env=env, timeout=1500)
    if run.returncode != 0:
        raise RuntimeError(f"slurm run failed (rc={run.returncode}, timed_out={run.timed_out}): "
                           f"{run.log[-3000:]}")
    jobs = run.jobs()
    rts = [j["runtime_s"] for j in jobs if j["runtime_s"] is not None]
    waits = [j["start"] - j["submit"] for j in jobs if j["start"] and j["submit"]]
    bench = [j for j in jobs if (j["comment"] or "").startswith(("rule_benchmark", "rule_bench_"))]
    bench_span = (max(j["end"] for j in bench) - min(j["start"] for j in bench)) if bench else None
    sub = submit_times(run.job_ids)
    # jobs submitted in the same poll cycle arrive as a burst: time per submission inside bursts
    ts = sorted(sub.values())
    gaps = [b - a for a, b in zip(ts, ts[1:]) if b - a < 0.5]
    busy = (max(j["end"] for j in jobs if j["end"]) - min(sub.values())) if sub and jobs else None
    return {"wall_s": run.wall_s, "sbatch": len(run.job_ids), "alloc_s": sum(rts),
            "job_runtime_s_mean": statistics.mean(rts) if rts else None,
            "queue_wait_s_mean": statistics.mean(waits) if waits else None,
            "bench_jobs": len(bench), "bench_span_s": bench_span,
            "bench_cpus": sorted({j["cpus"] for j in bench}),
            "bench_time_limit": sorted({j["time_limit"] for j in bench}),
            "submit_ms_per_job_in_burst": 1000 * statistics.mean(gaps) if gaps else None,
            "slurm_busy_s": busy,   # first submit -> last job end
            "run_uuid": run.run_uuid}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-sol", type=int, default=3)
    ap.add_argument("--n-wl", type=int, default=4)
    ap.add_argument("--bench-sleep", type=float, default=0, help="seconds each toy benchmark job sleeps")
    ap.add_argument("--group-sizes", default="0,20,6",
                    help="FIB_SLURM_BENCH_GROUP values to compare (0 = ungrouped)")
    ap.add_argument("--raw-calls", type=int, default=20)
    ap.add_argument("--raw-roundtrips", type=int, default=5)
    ap.add_argument("--skip-dag", action="store_true")
    ap.add_argument("--no-manage", action="store_true", help="never run .ci/slurm-up.sh / slurm-down.sh")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    managed = False
    ok, why = slurm_available()
    if not ok:
        if args.no_manage:
            print(f"SLURM not reachable: {why}")
            return 3
        print(f"[slurm_overhead] no cluster ({why}); running .ci/slurm-up.sh", flush=True)
        p = subprocess.run(["bash", str(REPO / ".ci/slurm-up.sh")], capture_output=True, text=True)
        print(p.stdout.strip())
        if p.returncode != 0:
            return 3
        managed = True
    try:
        ok, why = plugin_available()
        if not ok:
            print(why)
            return 3
        return _measure(args)
    finally:
        if managed:
            p = subprocess.run(["bash", str(REPO / ".ci/slurm-down.sh")], capture_output=True, text=True)
            print(p.stdout.strip())


def _measure(args) -> int:
    res: dict = {"host_cpus": os.cpu_count(),
                 "slurm": sh(["sinfo", "--version"]).stdout.strip(),
                 "config": {"n_sol": args.n_sol, "n_wl": args.n_wl, "bench_sleep": args.bench_sleep}}
    part = os.environ.get("FIB_SLURM_PARTITION") or "cpu"
    print("[slurm_overhead] raw sbatch ...", flush=True)
    res["raw"] = raw_sbatch(args.raw_calls, args.raw_roundtrips, part)

    tmp = Path(tempfile.mkdtemp(prefix="fib-slurm-overhead-"))
    try:
        one = ["build/s0.artifact", "--config", "n_sol=1", "n_wl=1"]
        print("[slurm_overhead] one job ...", flush=True)
        res["one_job"] = {"local_wall_s": local_run(tmp / "one-local", one),
                          "slurm": slurm_run(tmp / "one-slurm", one, env={"FIB_SLURM_BENCH_GROUP": "0"})}
        if not args.skip_dag:
            cfg = ["--config", f"n_sol={args.n_sol}", f"n_wl={args.n_wl}", f"bench_sleep={args.bench_sleep}"]
            print("[slurm_overhead] DAG local ...", flush=True)
            res["dag"] = {"local": {"wall_s": local_run(tmp / "dag-local", cfg)}}
            for g in [int(x) for x in args.group_sizes.split(",") if x.strip()]:
                label = "ungrouped" if g <= 1 else f"group{g}"
                print(f"[slurm_overhead] DAG slurm {label} ...", flush=True)
                res["dag"][label] = slurm_run(tmp / f"dag-{label}", cfg, env={"FIB_SLURM_BENCH_GROUP": str(g)})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    _print(res)
    if args.json:
        args.json.write_text(json.dumps(res, indent=2, default=str))
    return 0


def _f(x, fmt="{:.1f}"):
    return "-" if x is None else fmt.format(x)


def _print(res: dict) -> None:
    r = res["raw"]
    print(f"\n{res['slurm']}, {res['host_cpus']} CPUs\n")
    print("| raw SLURM | value |\n|---|---|")
    print(f"| `sbatch --wrap true` call, median (max) | {r['sbatch_call_ms_median']:.0f} ms ({r['sbatch_call_ms_max']:.0f} ms) |")
    print(f"| submit -> COMPLETED seen in squeue, median (min) | {r['roundtrip_s_median']:.2f} s ({r['roundtrip_s_min']:.2f} s) |")
    o = res["one_job"]
    s = o["slurm"]
    print("\n| one trivial job (`compile`) | value |\n|---|---|")
    print(f"| local executor, wall | {o['local_wall_s']:.1f} s |")
    print(f"| profiles/slurm, wall | {s['wall_s']:.1f} s |")
    print(f"| -> SLURM overhead per job (end to end) | {s['wall_s'] - o['local_wall_s']:.1f} s |")
    print(f"| of which inside the allocation (nested snakemake + srun) | {_f(s['job_runtime_s_mean'])} s |")
    print(f"| after the job ended until Snakemake finished (poll + local `all`) | "
          f"{_f(s['wall_s'] - s['slurm_busy_s'] if s['slurm_busy_s'] else None)} s (incl. ~startup) |")
    if "dag" not in res:
        return
    c = res["config"]
    n_remote = c["n_sol"] * (1 + c["n_wl"])
    loc = res["dag"]["local"]["wall_s"]
    print(f"\n| toy DAG: {c['n_sol']} compile + {c['n_sol'] * c['n_wl']} benchmark (sleep {c['bench_sleep']} s) "
          "+ local aggregate | wall | sbatch calls | allocation-s (sum) | mean job runtime | "
          "benchmark phase | bench CPUs / time limit | submit ms/job (burst) | wall - SLURM busy | (wall - local) / remote job |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| local executor (--cores 2, gpu=2) | {loc:.1f} s | 0 | - | - | - | - | - | - | - |")
    for label, d in res["dag"].items():
        if label == "local":
            continue
        print(f"| SLURM {label} | {d['wall_s']:.1f} s | {d['sbatch']} | {d['alloc_s']:.0f} s | "
              f"{_f(d['job_runtime_s_mean'])} s | {_f(d['bench_span_s'], '{:.0f}')} s | "
              f"{','.join(d['bench_cpus'])} / {','.join(d['bench_time_limit'])} | "
              f"{_f(d['submit_ms_per_job_in_burst'], '{:.0f}')} | "
              f"{_f(d['wall_s'] - d['slurm_busy_s'] if d['slurm_busy_s'] else None)} s | "
              f"{(d['wall_s'] - loc) / n_remote:.1f} s |")


if __name__ == "__main__":
    sys.exit(main())
