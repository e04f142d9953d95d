"""GPU check of the compile stage: every solution in a dataset builds, hits the cache, loads and
matches its reference.

    python benchmarks/compile_gpu_check.py [--dataset dataset] [--cache DIR] [--solutions a b]

For each solution: a cold build into an empty cache (a temp dir unless --cache), a second build
(must be a cache hit, timed in this process), a hit from a fresh process (timed inside it, so
interpreter start-up is excluded), load_runnable, and one run in both calling conventions on the
definition's smallest workload against the reference. For Triton it also reports whether running
the loaded artifact had to JIT-compile (new files in the artifact's triton_cache): it should not
for shapes that share the warm-up's specialisation. Prints a table; exits 1 if anything failed.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any, Dict, List

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from flashinfer_bench.compile import OK, build, load_runnable  # noqa: E402
from flashinfer_bench.compile import toolchain  # noqa: E402
from flashinfer_bench.data import TraceSet  # noqa: E402


def fresh_process_hits(dataset: Path, cache: Path, names: List[str]) -> Dict[str, Any]:
    code = textwrap.dedent(
        f"""
        import json, sys, time
        sys.path.insert(0, {str(REPO)!r})
        from flashinfer_bench.compile import build
        from flashinfer_bench.data import TraceSet
        ts = TraceSet.from_path({str(dataset)!r})
        out = {{}}
        for name in {names!r}:
            s = ts.get_solution(name)
            t0 = time.perf_counter()
            r = build(s, ts.get_definition(s.definition), {str(cache)!r})
            out[name] = [r.cache_hit, time.perf_counter() - t0]
        out["__torch_imported__"] = "torch" in sys.modules
        print(json.dumps(out))
        """
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr, file=sys.stderr)
        return {}
    return json.loads(p.stdout.strip().splitlines()[-1])


def triton_cache_files(artifact: Path) -> int:
    d = artifact / "triton_cache"
    return sum(1 for p in d.rglob("*") if p.is_file()) if d.is_dir() else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=str(REPO / "dataset"))
    ap.add_argument("--cache", default=None, help="artifact cache (default: a fresh temp dir)")
    ap.add_argument("--solutions", nargs="*", default=None)
    args = ap.parse_args()

    import torch

    from flashinfer_bench.compile.check import check_against_reference, smallest_workload

    dataset = Path(args.dataset)
    cache = Path(args.cache) if args.cache else Path(tempfile.mkdtemp(prefix="fib-compile-check-"))
    ts = TraceSet.from_path(dataset)
    sols = [s for s in ts.all_solutions() if not args.solutions or s.name in args.solutions]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    t0 = time.perf_counter()
    tc = toolchain.describe()
    print(f"toolchain ({time.perf_counter() - t0:.3f} s to detect): {json.dumps(tc)}")
    print(f"device: {torch.cuda.get_device_name() if device == 'cuda' else 'cpu'}; cache: {cache}\n")

    rows = []
    for s in sols:
        d = ts.get_definition(s.definition)
        row: Dict[str, Any] = {"solution": s.name, "lang": s.spec.language.value,
                               "binding": s.spec.effective_binding or "-"}
        t = time.perf_counter()
        r = build(s, d, cache)
        row["build_s"] = time.perf_counter() - t
        row["status"] = r.status
        if r.status != OK:
            row["note"] = r.message[:160]
            rows.append(row)
            continue
        t = time.perf_counter()
        r2 = build(s, d, cache)
        row["hit_ms"] = (time.perf_counter() - t) * 1e3
        row["hit"] = r2.cache_hit
        artifact = Path(r.artifact_dir)
        if not r.loadable_here:
            row["note"] = "compiled; cannot run on this machine (no GPU)"
            row["correct"] = "n/a"
            rows.append(row)
            continue
        before = triton_cache_files(artifact)
        try:
            t = time.perf_counter()
            rn = load_runnable(artifact, d)
            row["load_s"] = time.perf_counter() - t
            axes, scalars = smallest_workload(ts, d)
            t = time.perf_counter()
            chk = check_against_reference(rn, d, axes, scalars, device)
            row["run_s"] = time.perf_counter() - t
            row["correct"] = chk.ok
            row["max_abs"] = chk.max_abs_error
            row["note"] = "; ".join(chk.problems)[:160] + (f" axes={axes}")
        except Exception as e:  # report and go on: this is a check script  # noqa: BLE001
            row["correct"] = False
            row["note"] = f"{type(e).__name__}: {e}"[:160]
        if row["lang"] == "triton":
            row["jit_at_run"] = triton_cache_files(artifact) > before
        rows.append(row)

    fresh = fresh_process_hits(dataset, cache, [r["solution"] for r in rows if r["status"] == OK])
    for row in rows:
        if row["solution"] in fresh:
            row["fresh_hit"], secs = fresh[row["solution"]]
            row["fresh_hit_ms"] = secs * 1e3

    cols = [("solution", 34, "s"), ("lang", 8, "s"), ("binding", 7, "s"), ("status", 13, "s"),
            ("build_s", 8, ".2f"), ("hit_ms", 7, ".2f"), ("fresh_hit_ms", 12, ".2f"), ("load_s", 7, ".3f"),
            ("run_s", 7, ".3f"), ("correct", 7, "s"), ("max_abs", 9, ".2e"), ("jit_at_run", 10, "s")]
    print(" ".join(f"{c:<{w}}" for c, w, _ in cols) + " note")
    for row in rows:
        cells = []
        for c, w, fmt in cols:
            v = row.get(c, "")
            cells.append(f"{v:<{w}{fmt}}" if isinstance(v, float) else f"{str(v):<{w}}")
        print(" ".join(cells) + " " + str(row.get("note", "")))
    print(f"\nfresh-process hits imported torch: {fresh.get('__torch_imported__')}")
    bad = [r for r in rows if r["status"] != OK or r.get("correct") is False or not r.get("hit")
           or not r.get("fresh_hit", False) or r.get("jit_at_run")]
    print(f"{len(rows) - len(bad)}/{len(rows)} solutions OK (built, cache hit, loaded and correct where runnable)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
