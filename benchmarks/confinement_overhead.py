"""What confinement costs: the anchor dataset evaluated by a confined and an unconfined worker.

    python benchmarks/confinement_overhead.py [--dataset shared/anchor-dataset] [--device cuda:0]
                                              [--rounds 2] [--max-jobs N] [--out DIR]
                                              [--modes unconfined,confined,witness_off]
                                              [--definitions NAME ...] [--per-def N] [--from-rows FILE]

The supervisor's witness (issue 15), its share of each job: `--device cpu --dataset dataset
--modes confined,witness_off` (the example dataset on the CPU, its size limits and CPU settings
applied as the pipeline does) adds a table per definition: the witness's own seconds per job (from
the traces, `witness.seconds`), their share of the job's wall time (goal: under 2%), the rounds
and calls it took, and the traces it flagged (`witness_unresolved`, `unwitnessed`) or failed.

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

MODES = {"unconfined": {"FIB_SANDBOX": "off"}, "confined": {"FIB_SANDBOX": "auto"},
         # confined, the supervisor's witness off: what the witness adds per job
         "witness_off": {"FIB_SANDBOX": "auto", "FIB_WITNESS": "off"},
         # confined and witnessed, the first round's inputs made after the evaluation, not beside it
         "no_prestage": {"FIB_SANDBOX": "auto", "FIB_WITNESS_PRESTAGE": "off"}}


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


def _witness_table(rows: List[Dict[str, Any]], modes: List[str]) -> None:
    """Per definition: what the supervisor's witness cost in the jobs that ran it (its own seconds,
    recorded in each trace, and their share of the job's wall time), and what it decided."""
    wit = [r for r in rows if r["mode"] not in ("witness_off", "unconfined")]
    wit = [r for r in wit if r["round"] >= len(modes)] or wit  # each mode's first round warms caches
    if not wit:
        return
    off: Dict[Tuple[str, str], List[float]] = {}
    for r in rows:
        if r["mode"] == "witness_off" and r["round"] >= len(modes):
            off.setdefault((r["solution"], r["workload"]), []).append(r["wall_s"])
    print("\n| definition | jobs | witnessed | wall/job median (ms) | witness/job median (ms) | witness/job max (ms) "
          "| share median | share max | wall - witness off, median (ms) | rounds (mean) | calls (mean) | unresolved "
          "| unwitnessed | failed by it | its steps, median ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    all_share: List[float] = []
    for dname in sorted({r["definition"] for r in wit}):
        rs = [r for r in wit if r["definition"] == dname]
        w = [r for r in rs if (r.get("witness") or {}).get("seconds") is not None]  # the witness ran (not "unwitnessed")
        secs = [r["witness"]["seconds"] * 1e3 for r in w]
        share = [r["witness"]["seconds"] / r["wall_s"] for r in w if r["wall_s"] > 0]
        all_share += share
        rounds = [len(r["witness"].get("round_ms") or []) for r in w]
        calls = [r["witness"].get("calls") or 0 for r in w]
        # the same job's wall time with the witness off (paired, median of its later rounds)
        diffs = [(r["wall_s"] - statistics.median(off[k])) * 1e3 for r in rs
                 if (k := (r["solution"], r["workload"])) in off and r["round"] >= len(modes)]
        parts = [r["witness"].get("parts_ms") or {} for r in w]
        # the coarse round's steps (prepare, inputs, calls, check, null) or the device-time round's
        # (stage, go, check, null), whichever ran
        names = sorted({k for p in parts for k in p})
        steps = " ".join(f"{k} {statistics.median(p.get(k, 0.0) for p in parts):.0f}" for k in names) or "-"
        failed = sum(1 for r in rs if r["status"] != "PASSED"
                     and any(f in r["log"] for f in ("timing_disputed", "witness_wrong", "witness_failed")))
        print(f"| {dname} | {len(rs)} | {len(w)} | {statistics.median(r['wall_s'] for r in rs) * 1e3:.0f} | "
              f"{statistics.median(secs) if secs else math.nan:.1f} | {max(secs) if secs else math.nan:.1f} | "
              f"{100 * statistics.median(share) if share else math.nan:.1f}% | {100 * max(share) if share else math.nan:.1f}% | "
              f"{statistics.median(diffs) if diffs else math.nan:.0f} | {statistics.mean(rounds) if rounds else math.nan:.1f} | {statistics.mean(calls) if calls else math.nan:.1f} | "
              f"{sum('witness_unresolved' in r['flags'] for r in rs)} | {sum('unwitnessed' in r['flags'] for r in rs)} | "
              f"{failed} | {steps} |")
    if all_share:
        print(f"\nwitness share of a job's wall time over {len(all_share)} witnessed jobs: median "
              f"{100 * statistics.median(all_share):.2f}%, mean {100 * statistics.mean(all_share):.2f}%, "
              f"p90 {100 * _q(all_share, 0.9):.2f}%, max {100 * max(all_share):.2f}% (goal: under 2%)")


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
    ap.add_argument("--modes", default="unconfined,confined",
                    help="comma-separated, of " + ", ".join(MODES) + "; the first is the base of the ratios")
    ap.add_argument("--definitions", nargs="*", default=[], help="only these definitions")
    ap.add_argument("--per-def", type=int, default=0, help="at most N jobs per definition (0: all)")
    ap.add_argument("--from-rows", default=None, help="print the witness table of an earlier run's confinement_rows.json")
    args = ap.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if args.from_rows:
        rows = json.loads(Path(args.from_rows).read_text())["rows"]
        _witness_table(rows, list(dict.fromkeys(r["mode"] for r in rows)))
        return 0
    if len(modes) < 2 or any(m not in MODES for m in modes):
        ap.error(f"--modes: two or more of {sorted(MODES)}")

    from flashinfer_bench.bench.client import evaluate_via_worker, shutdown_worker, warm_worker
    from flashinfer_bench.bench.config import EvalConfig
    from flashinfer_bench.bench.loader import build_solution
    from flashinfer_bench.bench.skips import SkipRules
    from flashinfer_bench.data import TraceSet

    import yaml

    cfg_yaml = yaml.safe_load((REPO / "config.yaml").read_text()) or {}
    on_cpu = args.device == "cpu"
    cpu_limits = {k: v for k, v in (cfg_yaml.get("cpu") or {}).items() if k != "evaluation"} if on_cpu else None
    dataset = Path(args.dataset)
    if not dataset.is_dir():
        alt = (REPO / ".." / "shared" / "anchor-dataset").resolve()
        dataset = alt if alt.is_dir() else dataset
    tmp = Path(tempfile.mkdtemp(prefix="fib-confine-"))
    cache = Path(args.cache_dir) if args.cache_dir else tmp / "cache"
    ts = TraceSet.from_path(dataset)
    skips = SkipRules("cpu" if on_cpu else "cuda", cpu_limits)
    jobs: List[Tuple[Any, Any, Any, Dict[str, Any]]] = []
    t0 = time.perf_counter()
    skipped = 0
    for dname, definition in sorted(ts.definitions.items()):
        if args.definitions and dname not in args.definitions:
            continue
        n_def = 0
        for sol in ts.solutions_for(dname):
            wls = [wl for wl in ts.workloads_for(dname)
                   if skips.reason(definition, sol, wl.workload.axes) is None]
            skipped += len(ts.workloads_for(dname)) - len(wls)
            if not wls:
                continue
            b = build_solution(sol, definition, cache)
            if b.get("status") != "OK":
                print(f"skip {sol.name}: build {b.get('status')}: {str(b.get('log', ''))[:200]}")
                continue
            for wl in wls:
                if args.per_def and n_def >= args.per_def:
                    break
                jobs.append((definition, sol, wl.workload, b))
                n_def += 1
    if skipped:
        print(f"{skipped} (solution, workload) pairs skipped on {args.device} (the pipeline's skip rules)")
    if args.max_jobs:
        jobs = jobs[: args.max_jobs]
    print(f"{len(jobs)} jobs from {dataset} (builds {time.perf_counter() - t0:.1f} s)")
    if not jobs:
        return 1

    # the pipeline's evaluation settings (config.yaml), with a fixed sampling time unless --budget-s 0
    ev = dict(cfg_yaml.get("evaluation") or {})
    if on_cpu:
        ev.update((cfg_yaml.get("cpu") or {}).get("evaluation") or {})
    if args.budget_s > 0:
        ev.update(max_time_s=args.budget_s, target_rel_ci=1e-9, warmup_min_s=0.02, warmup_max_s=0.02)
    ev = {k: v for k, v in ev.items() if v is not None}
    print(f"evaluation settings: {ev}")
    cfgs = {
        m: EvalConfig(**ev, device=args.device, worker_dir=str(tmp / f"w-{m}"), cache_dir=str(cache),
                      allow_unconfined=(m == "unconfined"), idle_timeout_s=1800)
        for m in modes
    }
    starts: Dict[str, Any] = {}
    sandbox: Dict[str, str] = {}
    # FIB_DATASET_PATH: the confined runner may read the dataset from its start (no restart)
    base_env = {"FIB_DATASET_PATH": str(dataset.resolve())}
    for m in modes:
        old = _with_env({**MODES[m], **base_env})
        try:
            t = time.perf_counter()
            r = warm_worker(args.device, cfgs[m])
            starts[m] = {"warm_s": time.perf_counter() - t, "runner_startup_s": (r or {}).get("ready", {}).get("startup_s")}
            sandbox[m] = ((r or {}).get("ready", {}).get("confine") or {}).get("sandbox", "?")
        finally:
            _restore(old)
    rows: List[Dict[str, Any]] = []
    order = [m for r in range(args.rounds) for m in (modes if r % 2 == 0 else modes[::-1])]
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
                "samples": extra.get("samples"), "definition": definition.name,
                "witness": extra.get("witness"), "flags": extra.get("flags") or [],
                "log": ev.log[:300] if ev.status.value != "PASSED" else "",
            })
    for m in modes:
        shutdown_worker(args.device, cfgs[m])

    print("\nsandbox: " + "; ".join(f"{m} = {sandbox.get(m)!r}" for m in modes))
    print("\n| mode | runner start (s) | jobs | failed | wall/job median (ms) | wall/job mean (ms) | in runner, mean (ms) "
          "| outside the runner, mean (ms) | samples, mean | wall total (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    summ: Dict[str, Dict[str, float]] = {}
    for m in modes:
        rs = [r for r in rows if r["mode"] == m and r["round"] >= len(modes)]  # the first round of each mode warms caches
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
    u = summ[modes[0]]
    for m in modes[1:]:
        c = summ[m]
        print(f"\nwall per job, {m} vs {modes[0]}: median {100 * (c['median'] / u['median'] - 1):+.1f}%, "
              f"mean {100 * (c['mean'] / u['mean'] - 1):+.1f}% (goal <= +5%); in the runner {c['inside'] - u['inside']:+.1f} ms, "
              f"outside it (client, supervisor, sealing, memory watch, witness) {c['outside'] - u['outside']:+.1f} ms per job")
    _witness_table(rows, modes)

    # kernel time: per job, median over rounds in each mode; paired ratio
    def per_job(m: str) -> Dict[Tuple[str, str], List[float]]:
        d: Dict[Tuple[str, str], List[float]] = {}
        for r in rows:
            if r["mode"] == m and r["latency_ms"]:
                d.setdefault((r["solution"], r["workload"]), []).append(r["latency_ms"])
        return d

    pu, pc = per_job(modes[0]), per_job(modes[1])
    ratios, beyond = [], 0
    print(f"\n| solution | workload | {modes[0]} (us) | {modes[1]} (us) | ratio |")
    print("|---|---|---|---|---|")
    for k in sorted(set(pu) & set(pc)):
        a, b = statistics.median(pu[k]), statistics.median(pc[k])
        ratios.append(b / a)
        spread = max((max(v) - min(v)) / statistics.median(v) for v in (pu[k], pc[k]))
        if abs(b / a - 1) > max(spread, 0.03):
            beyond += 1
        print(f"| {k[0]} | {k[1][:12]} | {a * 1e3:.2f} | {b * 1e3:.2f} | {b / a:.3f} |")
    if ratios:
        print(f"\nkernel latency {modes[1]}/{modes[0]} over {len(ratios)} jobs: geomean {_geomean(ratios):.4f}, "
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
