"""What confinement costs: the anchor dataset evaluated by a confined and an unconfined worker.

    python benchmarks/confinement_overhead.py [--dataset shared/anchor-dataset] [--device cuda:0]
                                              [--rounds 2] [--max-jobs N] [--out DIR]

Builds every solution once (shared cache), then runs every (solution, workload) job through a
worker started with FIB_SANDBOX=auto (confined: Landlock, seccomp, namespaces, pids cgroup,
rlimits, memory watch, sealed replies, guard) and one started with FIB_SANDBOX=off and
allow_unconfined (nothing of that), alternating the two modes round by round so that drift of
the machine hits both alike. Each mode has its own worker directory; the device measurement lock
keeps the two from measuring at once.

Prints: runner start-up per mode; wall time per job (client side, median and total; a pipeline
job adds the same Python start-up in both modes); the kernel latency of every job in both modes
(paired ratio confined/unconfined: geometric mean, median, p10/p90, and how many jobs differ by
more than their own run-to-run spread); the sandbox string recorded in the traces.

Goals (issue 9): <= 5% more wall per job; no measurable change in kernel time.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

MODES = {"unconfined": {"FIB_SANDBOX": "off"}, "confined": {"FIB_SANDBOX": "auto"}}


def _q(xs: List[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return math.nan
    i = (len(s) - 1) * q
    lo, hi = math.floor(i), math.ceil(i)
    return s[lo] + (s[hi] - s[lo]) * (i - lo)


def _geomean(xs: List[float]) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan


def _with_env(values: Dict[str, str]) -> Dict[str, Optional[str]]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    return old


def _restore(old: Dict[str, Optional[str]]) -> None:
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default=str(REPO / "shared" / "anchor-dataset"))
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per mode (alternating; each mode's first is a warm-up)")
    ap.add_argument("--max-jobs", type=int, default=0, help="0: every (solution, workload)")
    ap.add_argument("--cache-dir", default=None, help="build cache (default: a temp dir)")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="where rows.json goes")
    ap.add_argument("--budget-s", type=float, default=0.2,
                    help="fixed sampling time per evaluation (never stops early), so that the two modes' "
                         "wall times differ only by what confinement costs; 0: adaptive, as the pipeline")
    args = ap.parse_args()

    from flashinfer_bench.bench.client import evaluate_via_worker, shutdown_worker, warm_worker
    from flashinfer_bench.bench.config import EvalConfig
    from flashinfer_bench.bench.loader import build_solution
    from flashinfer_bench.data import TraceSet

    dataset = Path(args.dataset)
    if not dataset.is_dir():
        alt = (REPO / ".." / "shared" / "anchor-dataset").resolve()
        dataset = alt if alt.is_dir() else dataset
    tmp = Path(tempfile.mkdtemp(prefix="fib-confine-"))
    cache = Path(args.cache_dir) if args.cache_dir else tmp / "cache"
    ts = TraceSet.from_path(dataset)
    jobs: List[Tuple[Any, Any, Any, Dict[str, Any]]] = []
    t0 = time.perf_counter()
    for dname, definition in sorted(ts.definitions.items()):
        for sol in ts.solutions_for(dname):
            b = build_solution(sol, definition, cache)
            if b.get("status") != "OK":
                print(f"skip {sol.name}: build {b.get('status')}: {str(b.get('log', ''))[:200]}")
                continue
            for wl in ts.workloads_for(dname):
                jobs.append((definition, sol, wl.workload, b))
    if args.max_jobs:
        jobs = jobs[: args.max_jobs]
    print(f"{len(jobs)} jobs from {dataset} (builds {time.perf_counter() - t0:.1f} s)")
    if not jobs:
        return 1

    # the pipeline's evaluation settings (config.yaml), with a fixed sampling time unless --budget-s 0
    import yaml

    ev = dict((yaml.safe_load((REPO / "config.yaml").read_text()) or {}).get("evaluation") or {})
    if args.budget_s > 0:
        ev.update(max_time_s=args.budget_s, target_rel_ci=1e-9, warmup_min_s=0.02, warmup_max_s=0.02)
    ev = {k: v for k, v in ev.items() if v is not None}
    print(f"evaluation settings: {ev}")
    cfgs = {
        m: EvalConfig(**ev, device=args.device, worker_dir=str(tmp / f"w-{m}"), cache_dir=str(cache),
                      allow_unconfined=(m == "unconfined"), idle_timeout_s=1800)
        for m in MODES
    }
    starts: Dict[str, Any] = {}
    sandbox: Dict[str, str] = {}
    # FIB_DATASET_PATH: the confined runner may read the dataset from its start (no restart)
    base_env = {"FIB_DATASET_PATH": str(dataset.resolve())}
    for m, env in MODES.items():
        old = _with_env({**env, **base_env})
        try:
            t = time.perf_counter()
            r = warm_worker(args.device, cfgs[m])
            starts[m] = {"warm_s": time.perf_counter() - t, "runner_startup_s": (r or {}).get("ready", {}).get("startup_s")}
            sandbox[m] = ((r or {}).get("ready", {}).get("confine") or {}).get("sandbox", "?")
        finally:
            _restore(old)
    rows: List[Dict[str, Any]] = []
    order = [m for _ in range(args.rounds) for m in (("unconfined", "confined") if _ % 2 == 0 else ("confined", "unconfined"))]
    for rnd, m in enumerate(order):
        for definition, sol, wl, b in jobs:
            t = time.perf_counter()
            tr = evaluate_via_worker(definition, sol, wl, b, cfgs[m], dataset_root=dataset, device=args.device)
            wall = time.perf_counter() - t
            ev = tr.evaluation
            extra = (ev.correctness.extra or {}) if ev.correctness else {}
            rows.append({
                "mode": m, "round": rnd, "solution": sol.name, "workload": wl.uuid, "status": ev.status.value,
                "wall_s": wall, "latency_ms": ev.performance.latency_ms if ev.performance else None,
                "rel_iqr": extra.get("rel_iqr"), "sandbox": ev.environment.model_dump().get("sandbox"),
                "runner_s": extra.get("runner_seconds"), "phase_s": extra.get("phase_s"),
                "samples": extra.get("samples"),
                "log": ev.log[:300] if ev.status.value != "PASSED" else "",
            })
    for m in MODES:
        shutdown_worker(args.device, cfgs[m])

    print(f"\nsandbox: confined = {sandbox.get('confined')!r}; unconfined = {sandbox.get('unconfined')!r}")
    print("\n| mode | runner start (s) | jobs | failed | wall/job median (ms) | wall/job mean (ms) | in runner, mean (ms) "
          "| outside the runner, mean (ms) | samples, mean | wall total (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    summ: Dict[str, Dict[str, float]] = {}
    for m in MODES:
        rs = [r for r in rows if r["mode"] == m and r["round"] > 1]  # the first round of each mode warms caches
        rs = rs or [r for r in rows if r["mode"] == m]
        walls = [r["wall_s"] * 1e3 for r in rs]
        inside = [r["runner_s"] * 1e3 for r in rs if r.get("runner_s")]
        outside = [r["wall_s"] * 1e3 - r["runner_s"] * 1e3 for r in rs if r.get("runner_s")]
        samples = [r["samples"] for r in rs if r.get("samples")]
        summ[m] = {"median": statistics.median(walls), "mean": statistics.mean(walls), "total": sum(walls) / 1e3,
                   "inside": statistics.mean(inside) if inside else math.nan,
                   "outside": statistics.mean(outside) if outside else math.nan}
        st = starts[m].get("runner_startup_s")
        print(f"| {m} | {st if st is None else f'{st:.2f}'} | {len(rs)} | {sum(r['status'] != 'PASSED' for r in rs)} | "
              f"{summ[m]['median']:.1f} | {summ[m]['mean']:.1f} | {summ[m]['inside']:.1f} | {summ[m]['outside']:.1f} | "
              f"{statistics.mean(samples) if samples else math.nan:.0f} | {summ[m]['total']:.1f} |")
    u, c = summ["unconfined"], summ["confined"]
    print(f"\nwall per job, confined vs unconfined: median {100 * (c['median'] / u['median'] - 1):+.1f}%, "
          f"mean {100 * (c['mean'] / u['mean'] - 1):+.1f}% (goal <= +5%); in the runner {c['inside'] - u['inside']:+.1f} ms, "
          f"outside it (client, supervisor, sealing, memory watch) {c['outside'] - u['outside']:+.1f} ms per job")

    # kernel time: per job, median over rounds in each mode; paired ratio
    def per_job(m: str) -> Dict[Tuple[str, str], List[float]]:
        d: Dict[Tuple[str, str], List[float]] = {}
        for r in rows:
            if r["mode"] == m and r["latency_ms"]:
                d.setdefault((r["solution"], r["workload"]), []).append(r["latency_ms"])
        return d

    pu, pc = per_job("unconfined"), per_job("confined")
    ratios, beyond = [], 0
    print("\n| solution | workload | unconfined (us) | confined (us) | ratio |")
    print("|---|---|---|---|---|")
    for k in sorted(set(pu) & set(pc)):
        a, b = statistics.median(pu[k]), statistics.median(pc[k])
        ratios.append(b / a)
        spread = max((max(v) - min(v)) / statistics.median(v) for v in (pu[k], pc[k]))
        if abs(b / a - 1) > max(spread, 0.03):
            beyond += 1
        print(f"| {k[0]} | {k[1][:12]} | {a * 1e3:.2f} | {b * 1e3:.2f} | {b / a:.3f} |")
    if ratios:
        print(f"\nkernel latency confined/unconfined over {len(ratios)} jobs: geomean {_geomean(ratios):.4f}, "
              f"median {statistics.median(ratios):.4f}, p10 {_q(ratios, 0.1):.4f}, p90 {_q(ratios, 0.9):.4f}; "
              f"{beyond} job(s) differ by more than max(3%, their run-to-run spread) (goal: no measurable change)")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "confinement_rows.json").write_text(json.dumps({"starts": starts, "sandbox": sandbox, "rows": rows}, indent=1))
    bad = [r for r in rows if r["status"] != "PASSED"]
    for r in bad[:10]:
        print(f"not PASSED: {r['mode']} {r['solution']} {r['workload'][:12]}: {r['status']}: {r['log']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
