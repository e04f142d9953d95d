"""The whole cycle on a GPU, timed: trace the example model, benchmark the new workloads through
the pipeline, apply the best solutions, and compare the model's end-to-end time with the fallback.

    python benchmarks/cycle_gpu.py                          # defaults: 4 blocks, tokens 1,16,128,512
    python benchmarks/cycle_gpu.py --bench api              # Benchmark(...).run_all() instead

Steps (each printed with its wall time):
1. a fresh dataset in a temp dir: the repository's definitions and solutions, no workloads/traces;
2. trace examples/tiny_model.py over --tokens (shape_only dedup: one workload per shape);
3. `python -m flashinfer_bench run --local DS` benchmarks them (or the Benchmark API);
4. trace again with one more token count, re-run the pipeline: only the new workloads run;
5. enable_apply(DS): build time of the winners, the dispatch table, calls per solution;
6. end-to-end forward time per token count, fallback vs apply (median of --repeat, after warm-up),
   and the largest difference between the two outputs.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

REPO = Path(__file__).resolve().parent.parent


def _model():
    spec = importlib.util.spec_from_file_location("tiny_model_example", REPO / "examples" / "tiny_model.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def _count_traces(ds: Path) -> int:
    return sum(len(f.read_text().splitlines()) for f in (ds / "traces").rglob("*.jsonl")) if (ds / "traces").is_dir() else 0


def _print_failures(ds: Path) -> None:
    """The message of every trace that did not pass (compile errors aside): what to fix."""
    for f in sorted((ds / "traces").rglob("*.jsonl")):
        for line in f.read_text().splitlines():
            t = json.loads(line)
            ev = t.get("evaluation") or {}
            if ev.get("status") not in ("PASSED", "COMPILE_ERROR"):
                log = (ev.get("log") or "").strip().splitlines()
                print(f"  {t['solution']} {t['workload']['axes']} {ev.get('status')}: {' | '.join(log[-6:])[:1500]}")


def _benchmark(ds: Path, how: str, results: Path, extra: Sequence[str]) -> float:
    t0 = time.perf_counter()
    if how == "pipeline":
        cmd = [sys.executable, "-m", "flashinfer_bench", "run", "--local", str(ds), "--results", str(results), *extra]
        r = subprocess.run(cmd, capture_output=True, text=True)
        print(r.stdout[-4000:])
        if r.returncode != 0:
            print(r.stderr[-4000:], file=sys.stderr)
            raise SystemExit(f"pipeline failed ({r.returncode})")
    else:
        from flashinfer_bench import Benchmark, BenchmarkConfig, TraceSet

        ts = TraceSet.from_path(ds)
        Benchmark(ts, BenchmarkConfig()).run_all(resume=True)
    return time.perf_counter() - t0


def main(argv: Sequence[str] = ()) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--blocks", type=int, default=4)
    p.add_argument("--tokens", default="1,16,128,512")
    p.add_argument("--extra-tokens", type=int, default=64, help="traced in step 4 (the incremental run)")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--bench", choices=("pipeline", "api"), default="pipeline")
    p.add_argument("--keep", metavar="DIR", help="build the dataset here and keep it")
    p.add_argument("--json", default="")
    p.add_argument("pipeline_args", nargs="*", help="extra arguments for `flashinfer-bench run`")
    args = p.parse_args(list(argv) or None)

    import torch

    import flashinfer_bench as fb
    from flashinfer_bench.apply import dispatch_table, stats

    if not torch.cuda.is_available():
        print("no CUDA device: this script is for the GPU machine", file=sys.stderr)
        return 2
    tm = _model()
    tokens = [int(t) for t in args.tokens.split(",") if t]
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="fib-cycle-"))
    ds = work / "ds"
    if ds.exists():
        shutil.rmtree(ds)
    shutil.copytree(REPO / "dataset" / "definitions", ds / "definitions")
    shutil.copytree(REPO / "dataset" / "solutions", ds / "solutions")
    os.environ.setdefault("FIB_CACHE_PATH", str(work / "cache"))
    report: Dict[str, Any] = {"device": torch.cuda.get_device_name(), "tokens": tokens, "blocks": args.blocks}

    model = tm.TinyModel(blocks=args.blocks, device="cuda")
    xs = tm.inputs(tokens, "cuda")

    t0 = time.perf_counter()
    with fb.enable_tracing(dataset_dir=ds) as tr:
        tm.run(model, xs)
    report["trace_s"] = time.perf_counter() - t0
    report["traced"] = tr.stats
    print(f"[1-2] traced {tr.stats['written']} workloads in {report['trace_s']:.2f} s")

    report["bench_s"] = _benchmark(ds, args.bench, work / "results", args.pipeline_args)
    n1 = _count_traces(ds)
    print(f"[3] benchmarked: {n1} traces in {report['bench_s']:.1f} s")
    _print_failures(ds)

    with fb.enable_tracing(dataset_dir=ds) as tr2:
        tm.run(model, tm.inputs(tokens + [args.extra_tokens], "cuda"))
    report["bench_incremental_s"] = _benchmark(ds, args.bench, work / "results", args.pipeline_args)
    n2 = _count_traces(ds)
    report["incremental"] = {"new_workloads": tr2.stats["written"], "new_traces": n2 - n1}
    print(f"[4] +{tr2.stats['written']} workloads -> +{n2 - n1} traces in {report['bench_incremental_s']:.1f} s")

    t0 = time.perf_counter()
    rt = fb.enable_apply(ds)
    report["apply_enable_s"] = time.perf_counter() - t0
    report["built"] = rt.solutions_built
    report["failed"] = sorted(rt.failed)
    report["dispatch_table"] = {d: {str(k): s for k, s in t.items()} for d, t in dispatch_table().items()}
    print(f"[5] enable_apply: {report['apply_enable_s']:.1f} s, built {rt.solutions_built}, failed {sorted(rt.failed)}")
    for d, t in report["dispatch_table"].items():
        print(f"    {d}: {t}")
    fb.disable_apply()

    rows: List[Dict[str, Any]] = []
    for t, x in zip(tokens, xs):
        def timed(use_apply: bool) -> Any:
            if use_apply:
                fb.enable_apply(ds)
            try:
                res = tm.run(model, [x], repeat=args.repeat + 3)
            finally:
                if use_apply:
                    fb.disable_apply()
            return res["outputs"][0], statistics.median(res["seconds"][3:]) * 1e3

        out_fb, ms_fb = timed(False)
        out_ap, ms_ap = timed(True)
        rows.append({
            "tokens": t, "fallback_ms": ms_fb, "apply_ms": ms_ap, "speedup": ms_fb / ms_ap,
            "max_abs_diff": float((out_fb.float() - out_ap.float()).abs().max()),
            "calls": stats(),
        })
    report["e2e"] = rows
    print(f"\nend-to-end forward on {report['device']}, {args.blocks} blocks, hidden 4096 (median of {args.repeat})")
    print("| tokens | fallback ms | apply ms | speedup | max abs diff |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['tokens']} | {r['fallback_ms']:.3f} | {r['apply_ms']:.3f} | {r['speedup']:.2f}x | {r['max_abs_diff']:.3g} |")
    for r in rows:
        print(f"calls with {r['tokens']} tokens ({args.repeat + 3} passes): {r['calls']}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
