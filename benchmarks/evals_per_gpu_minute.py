"""Evaluations per GPU-minute (issue 19): ours against FlashInfer-Bench 0.1.2 on the same GPU, same call.

    python benchmarks/evals_per_gpu_minute.py [--anchor shared/anchor-dataset] [--upstream-path /tmp/fib012]
        [--workloads 100] [--pairs 2] [--families]

Makes a 300-evaluation dataset from the anchor dataset (its 3 solutions x 100 workloads, the batch
axis 1..100), then runs cold both tools alternating (`--pairs` times; ours with empty caches, no
worker, no build zygote; upstream in a fresh process), and ours warm: the same evaluations again
with nothing cached in the dataset (traces and results removed) but caches and the worker warm.
With `--families`, the same for the example dataset's attention/MLA/sampling/MoE definitions
(ours only: 0.1.2 has no input generators for them). Prints a table, where each evaluation's
time went (the runner's phases, medians), and the run-to-run latency difference of our two cold
runs (accuracy is not traded: it must stay within 1%).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline_gpu import REPO, _latencies, ours, run, synthetic  # noqa: E402

FAMILIES = ("gqa_paged", "gqa_ragged", "mla_paged", "sampling", "moe")


def traces(dataset: Path) -> List[dict]:
    out = []
    for f in (dataset / "traces").rglob("*.jsonl"):
        out += [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
    return out


def summary(dataset: Path) -> Tuple[int, int, float, Dict[str, float]]:
    """(traces, passed, median eval seconds, median seconds per phase) of a dataset's traces: the
    runner's phases, the supervisor's (`sup.*`: its own share, the reference timing, the runner's
    whole reply, the witness) and the witness's parts (`witness.*`)."""
    ts = traces(dataset)
    passed = sum(1 for t in ts if (t.get("evaluation") or {}).get("status") == "PASSED")
    secs, phases = [], {}
    for t in ts:
        extra = ((t.get("evaluation") or {}).get("correctness") or {}).get("extra") or {}
        if "eval_seconds" in extra:
            secs.append(float(extra["eval_seconds"]))
        parts = {**(extra.get("phase_s") or {}),
                 **{f"sup.{k}": v for k, v in (extra.get("supervisor_s") or {}).items()},
                 **{f"witness.{k}": v / 1e3 for k, v in ((extra.get("witness") or {}).get("parts_ms") or {}).items()}}
        for k, v in parts.items():
            phases.setdefault(k, []).append(float(v))
    med = {k: statistics.median(v) for k, v in phases.items()}
    return len(ts), passed, statistics.median(secs) if secs else float("nan"), med


def witness_summary(dataset: Path) -> str:
    """How the witness judged the PASSED traces: its estimate over the claim (median, max), flags."""
    ratios, flagged = [], {}
    for t in traces(dataset):
        ev = t.get("evaluation") or {}
        extra = (ev.get("correctness") or {}).get("extra") or {}
        for f in extra.get("flags") or []:
            flagged[f] = flagged.get(f, 0) + 1
        w, lat = extra.get("witness") or {}, (ev.get("performance") or {}).get("latency_ms")
        claim = max([x for x in (lat, extra.get("host_ms")) if isinstance(x, (int, float))] or [0])
        if isinstance(w.get("est_ms"), (int, float)) and claim > 0:
            ratios.append(w["est_ms"] / claim)
    ratios.sort()
    if not ratios:
        return f"witness: no estimates; flags {flagged}"
    return (f"witness: {len(ratios)} judged, estimate/claim median {ratios[len(ratios) // 2]:.2f} "
            f"p90 {ratios[int(0.9 * (len(ratios) - 1))]:.2f} max {ratios[-1]:.2f}; flags {flagged}")


def fresh_env(root: Path, tag: str) -> dict:
    keys = ("FIB_CACHE_PATH", "FIB_WORKER_DIR", "TRITON_CACHE_DIR", "FIB_ZYGOTE_DIR", "FIB_GPU_SLOT_DIR")
    return {**os.environ, **{k: str(root / f"{tag}-{k.lower()}") for k in keys}}


def families_dataset(src: Path, dst: Path) -> int:
    """The example dataset cut to the real families' definitions (and their solutions, workloads)."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("traces"))
    keep = 0
    for d in list((dst / "definitions").rglob("*.json")):
        obj = json.loads(d.read_text())
        if not str(obj.get("op_type", "")).startswith(FAMILIES):
            name = obj["name"]
            d.unlink()
            for p in list((dst / "solutions").rglob("*.json")):
                if json.loads(p.read_text()).get("definition") == name:
                    p.unlink()
            for p in (dst / "workloads").rglob(f"{name}.jsonl"):
                p.unlink()
        else:
            keep += 1
    return keep


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--anchor", type=Path, default=REPO / "shared/anchor-dataset")
    ap.add_argument("--upstream-path", type=Path, default=None, help="a --target dir holding flashinfer_bench 0.1.2")
    ap.add_argument("--workloads", type=int, default=100, help="workloads per definition (batch 1..N)")
    ap.add_argument("--pairs", type=int, default=2, help="cold runs of each tool, alternating")
    ap.add_argument("--families", action="store_true", help="also the example dataset's real families (ours only)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fib-epm-"))
    base = tmp / "base"
    synthetic(args.anchor, base, list(range(1, args.workloads + 1)))
    rows: List[Tuple[str, float, str]] = []
    ours_walls, up_walls, cold_lat = [], [], []
    have_upstream = args.upstream_path is not None and (args.upstream_path / "flashinfer_bench").is_dir()

    def upstream(i: int) -> float:
        uds = tmp / f"up{i}"
        shutil.copytree(base, uds)
        uenv = {**os.environ, "PYTHONPATH": f"{args.upstream_path}:/tmp/site",
                "FIB_CACHE_PATH": str(tmp / f"ucache{i}"), "TRITON_CACHE_DIR": str(tmp / f"utriton{i}")}
        code = ("import sys; from flashinfer_bench.cli.main import cli; "
                "sys.argv=['flashinfer-bench','run','--local',sys.argv[1]]; cli()")
        w, _ = run([sys.executable, "-c", code, str(uds)], env=uenv, cwd=str(tmp))
        n, passed, _, _ = summary(uds)
        print(f"    upstream: {n} traces, {passed} PASSED", flush=True)
        return w

    for i in range(args.pairs):
        ds = tmp / f"ours{i}"
        shutil.copytree(base, ds)
        (tmp / f"w{i}").mkdir()
        env = fresh_env(tmp, f"c{i}")
        w, _ = ours(ds, tmp / f"w{i}/results", env)
        ours_walls.append(w)
        n, passed, med, ph = summary(ds)
        cold_lat.append(_latencies(ds))
        print(f"    ours: {n} traces, {passed} PASSED, median {med * 1e3:.0f} ms per evaluation in the worker", flush=True)
        print(f"    {witness_summary(ds)}", flush=True)
        if i == 0:
            phase_row = ph
            n_evals = n
        if have_upstream:
            up_walls.append(upstream(i))
    # warm: the last cold run's dataset again, traces and results removed, caches and worker warm
    ds = tmp / f"ours{args.pairs - 1}"
    shutil.rmtree(ds / "traces", ignore_errors=True)
    shutil.rmtree(tmp / f"w{args.pairs - 1}/results", ignore_errors=True)
    warm, _ = ours(ds, tmp / f"w{args.pairs - 1}/results", fresh_env(tmp, f"c{args.pairs - 1}"))
    n_w, passed_w, med_w, ph_w = summary(ds)
    print(f"    warm {witness_summary(ds)}", flush=True)

    med = statistics.median
    rows.append((f"ours: cold run, {n_evals} evaluations (median of {len(ours_walls)})", med(ours_walls),
                 " ".join(f"{x:.1f}" for x in ours_walls)))
    rows.append((f"ours: warm re-run ({n_w} evaluations, {passed_w} PASSED)", warm, ""))
    if up_walls:
        rows.append((f"upstream 0.1.2: cold run (median of {len(up_walls)})", med(up_walls), " ".join(f"{x:.1f}" for x in up_walls)))
        rows.append(("ours cold / upstream cold", med(ours_walls) / med(up_walls), "goal <= 0.5"))
        rows.append(("ours warm / upstream cold", warm / med(up_walls), "goal <= 0.35"))
    rows.append(("ours: evaluations per GPU-minute, cold", n_evals / med(ours_walls) * 60, ""))
    if up_walls:
        rows.append(("upstream 0.1.2: evaluations per GPU-minute, cold", n_evals / med(up_walls) * 60, ""))
    if len(cold_lat) >= 2:
        a, b = cold_lat[0], cold_lat[1]
        d = sorted(abs(a[k] / b[k] - 1) * 100 for k in set(a) & set(b))
        if d:
            rows.append(("run-to-run latency difference, ours cold 1 vs 2", d[len(d) // 2], f"% median, p90 {d[int(0.9 * (len(d) - 1))]:.2f}% (goal <= 1)"))
    if up_walls:
        a, b = cold_lat[0], _latencies(tmp / "up0")
        r = sorted(a[k] / b[k] for k in set(a) & set(b))
        if r:
            rows.append(("ours / upstream latency, same (solution, workload)", r[len(r) // 2], f"median ratio over {len(r)}"))

    if args.families:
        fds = tmp / "families"
        ndef = families_dataset(REPO / "dataset", fds)
        (tmp / "fw").mkdir()
        fenv = fresh_env(tmp, "fam")
        w, _ = ours(fds, tmp / "fw/results", fenv)
        n, passed, m, _ = summary(fds)
        rows.append((f"ours: families cold ({ndef} definitions, {n} evaluations, {passed} PASSED)", w, f"median {m * 1e3:.0f} ms/eval"))
        shutil.rmtree(fds / "traces", ignore_errors=True)
        shutil.rmtree(tmp / "fw/results", ignore_errors=True)
        w, _ = ours(fds, tmp / "fw/results", fenv)
        rows.append(("ours: families warm re-run", w, ""))

    print("\n## evaluations per GPU-minute\n")
    print(f"{'measurement':62s} {'value':>9s}  note")
    for name, v, note in rows:
        print(f"{name:62s} {v:9.3f}  {note}")
    print(f"\nper evaluation, medians (s): cold {' '.join(f'{k}={v:.4f}' for k, v in phase_row.items())}")
    print(f"per evaluation, medians (s): warm {' '.join(f'{k}={v:.4f}' for k, v in ph_w.items())} (eval {med_w:.4f})")


if __name__ == "__main__":
    main()
