"""How often the witness disputes an honest cheap call, and how close it comes: evaluate the
security tests' honest RMSNorm (`GOOD_VR`, 8 x 256 by default: ~11 us a call on the 2-core VM,
rounds of 128 calls) N times through the worker, a new solution name each time, and print one
table: evaluations, not PASSED, the witnessed estimate over the claim (p50/p90/max) and the largest
per-round load (`witness.round_load`). Run it beside a load (e.g. the README's pytest) to see what a
loaded machine does to honest traces; `--jsonl` keeps each evaluation's row.

    python benchmarks/honest_disputes.py --n 150 [--batch 8] [--jsonl rows.jsonl]
    python benchmarks/honest_disputes.py --definition ../shared/real-sample/definitions/rmsnorm/rmsnorm_h4096.json \
        --axes '{"batch_size": 4}'   # a real definition, its reference as the solution (test_real_families)
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from flashinfer_bench.bench.client import evaluate_via_worker, shutdown_worker  # noqa: E402
from flashinfer_bench.bench.config import EvalConfig  # noqa: E402
from flashinfer_bench.bench.loader import _shim_build  # noqa: E402
from flashinfer_bench.data import Definition, Workload  # noqa: E402

from tests.bench.conftest import GOOD_VR, make_solution, rms_definition, rms_workload  # noqa: E402


def _row(ev: Any) -> Dict[str, Any]:
    w = ((ev.correctness.extra if ev.correctness else None) or {}).get("witness") or {}
    claim = ev.performance.latency_ms * 1e3 if ev.performance else None
    est = (w.get("est_ms") or 0.0) * 1e3
    return {"status": ev.status.value, "claim_us": claim, "est_us": est, "bound_us": (w.get("bound_ms") or 0.0) * 1e3,
            "rounds": len(w.get("round_ms") or []), "k": w.get("k"), "max_load": max([f for f in (w.get("round_load") or []) if f is not None] or [1.0]),
            "log": ev.log[-300:] if ev.status.value != "PASSED" else ""}


def _pct(xs: List[float], q: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--jsonl", default="")
    ap.add_argument("--definition", default="", help="a definition's JSON file: its reference is the solution")
    ap.add_argument("--axes", default="{}", help="the workload's var axes (JSON), with --definition")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fib-honest-disputes-"))
    # the security and bench tests' budgets: a short claim measurement, as in CI
    cfg = EvalConfig(device="cpu", worker_dir=str(tmp / "w"), cache_dir=str(tmp / "c"), max_time_s=0.03,
                     warmup_max_s=0.01, warmup_min_s=0.0, iterations=10, timeout_s=60, idle_timeout_s=300)
    if args.definition:
        d = Definition.model_validate(json.loads(Path(args.definition).read_text()))
        wl = Workload(axes=json.loads(args.axes), inputs={}, uuid=f"honest_{d.name}")
        source = d.reference
    else:
        d, wl, source = rms_definition(), rms_workload(args.batch, uuid=f"honest_b{args.batch}"), GOOD_VR
    rows: List[Dict[str, Any]] = []
    out = open(args.jsonl, "w") if args.jsonl else None
    try:
        for i in range(args.n):
            sol = make_solution(f"honest_{i}", source + f"\n# {i}\n", d)
            rows.append(_row(evaluate_via_worker(d, sol, wl, _shim_build(sol, tmp / "cache"), cfg).evaluation))
            if out:
                out.write(json.dumps(rows[-1]) + "\n")
                out.flush()
            if (i + 1) % 25 == 0:
                print(f"{i + 1}/{args.n} evaluated", flush=True)
    finally:
        shutdown_worker("cpu", cfg)
        if out:
            out.close()
    ok = [r for r in rows if r["status"] == "PASSED" and r["claim_us"] and r["est_us"]]
    ratio = [r["est_us"] / r["claim_us"] for r in ok]
    print(f"\n| evaluations | not PASSED | est/claim p50 | p90 | max | max round load |\n|---|---|---|---|---|---|")
    print(f"| {len(rows)} | {len(rows) - sum(r['status'] == 'PASSED' for r in rows)} | {_pct(ratio, 0.5):.2f} | "
          f"{_pct(ratio, 0.9):.2f} | {max(ratio, default=float('nan')):.2f} | {max((r['max_load'] for r in rows), default=1.0):.2f} |")
    for r in rows:
        if r["status"] != "PASSED":
            print(f"  {r['status']}: {r['log']}")


if __name__ == "__main__":
    main()
