"""Attacks tried / rejected / flagged per class and device (issue 15's table).

    python benchmarks/attack_table.py --device cuda [--only rewrite_stats,sealer_wrap] [--json out.json]

Runs every runtime attack of tests/security/attacks (the build-time ones are
tests/security/test_build_attacks.py) through the security tests' lab (a confined worker, a small
RMSNorm dataset) on the given device, each between two evaluations of an honest solution, and
prints one row per attack and a table per class:

- rejected: the attack's trace is not PASSED;
- flagged: PASSED but marked suspect (the report and apply() rank no suspect trace);
- contained: PASSED without a gain and unflagged (a side effect that did not happen);
- GAIN: PASSED, unflagged and faster than the honest solution of the same work by more than
  `GAIN_OVER_HONEST` (1.5x; the defence failed). "The same work": an attack that computes `COST`
  RMSNorms a call on a CPU is compared with the honest solution's speedup / `COST` (each row's
  `forgery` column: how much faster its record is than its work);
- honest ok: the honest solution evaluated after the attack keeps PASSED with its latency within
  noise of the one before it (an attack file that "Tries: nothing dishonest", an honest convention
  such as a static output buffer, is itself that honest solution: not PASSED counts as harmed) (GPU: 1.25x + 5 us; CPU: 3x + 0.3 ms, the security tests' band on a
  shared 2-core VM where the honest call takes ~20 us).

The attacks that do honest work make it cost about 3 ms a call on a CPU (COST repeats); the
attack's speedup is compared with the honest solution's on the same workload, as in
tests/security/test_in_runner.py, scaled by the work it does (until session 21 the table compared
a COST attack with one honest call, so a CPU forgery under ~300x read "contained"; no row of the
tables measured before then had a forgery factor over 1).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from flashinfer_bench.bench.client import evaluate_via_worker, shutdown_worker  # noqa: E402
from flashinfer_bench.data import Trace  # noqa: E402

from tests.bench.conftest import rms_workload  # noqa: E402
from tests.security.conftest import ATTACKS, LIMITS, SECRET, Lab, env_vars, flags  # noqa: E402

# what each attack needs filled in (the values the security tests use); COST makes honest work ~3 ms
SUBST: Dict[str, Dict[str, Any]] = {
    "fork_bomb": {"N": 2000, "SLEEP": 60},
    "big_alloc": {"BYTES": 3 << 30},
    "memory_children": {"N": 4, "EACH": 700 << 20},
    "huge_log": {"LINES": 40_000},
    "fd_exhaust": {"N": 8},
    "scratch_fill": {"FILES": 40, "MB": 15, "INODES": 50_000},
    "memfd_fill": {"N": 200, "MB": 15},
    "socket_localhost": {"targets": {"port": 9, "abstract": "fib-attack-table"}},
    "shm_fill": {"marker": "fib-attack-table"},
    "sysv_ipc_stash": {"KEY": 0x46494231, "MB": 64},
    "big_weights_rewrite_stats": None,  # its own definition: tests/security/test_large_inputs.py
}
CLASS_OF_LEGACY = {  # the first red team's files say "# expect:" instead of their class
    "background_thread": "cross-talk", "fork_bomb": "cross-talk", "slow_competitors": "cross-talk",
    "big_alloc": "leaks and gaps", "memory_children": "leaks and gaps", "huge_log": "leaks and gaps",
    "shm_fill": "leaks and gaps", "surrogate_log": "leaks and gaps", "env_secret": "leaks and gaps",
    "edit_other_solution": "leaks and gaps", "read_supervisor_files": "leaks and gaps",
    "write_passed_trace": "leaks and gaps", "write_quietly": "leaks and gaps", "socket_localhost": "leaks and gaps",
    "forge_result": "harness state", "patch_harness": "harness state", "patch_torch_op": "harness state",
    "predict_rechecks": "predictable inputs", "scrape_reference": "harness state",
    "gpu_background_kernels": "cross-talk", "gpu_grab_memory": "leaks and gaps",
}
GAIN_OVER_HONEST = 1.5
COST = 100  # RMSNorms a call for the attacks that do honest work on a CPU (their __COST__)
WL = rms_workload(16, uuid="rms_table")
SMALL = rms_workload(8, uuid="rms_table_small")
GPU_WL = rms_workload(4096, uuid="rms_table_gpu")


def is_honest_control(name: str) -> bool:
    """An attack file that "Tries: nothing dishonest" (an honest solution's convention the harness
    must not fail, e.g. a static output buffer): its rejection is an honest solution harmed."""
    return "Tries: nothing dishonest" in (ATTACKS / f"{name}.py").read_text()


def attack_class(name: str) -> str:
    """The class an attack's docstring names ("Class: harness state reached ... (frames)")."""
    head = (ATTACKS / f"{name}.py").read_text().split("\n", 3)[:3]
    m = re.search(r"Class:\s*([^(/.]+)", " ".join(head))
    if not m:
        return CLASS_OF_LEGACY.get(name, "other")
    c = m.group(1).strip().lower()
    for key in ("harness state", "predictable inputs", "build-time", "cross-talk", "leaks and gaps"):
        if c.startswith(key):
            return key
    return c


def attacks(device: str) -> List[str]:
    names = sorted(p.stem for p in ATTACKS.glob("*.py") if not p.stem.startswith("build_"))
    names = [n for n in names if SUBST.get(n, {}) is not None]
    return [n for n in names if device != "cpu" or not n.startswith("gpu_")]


def work_of(name: str, device: str) -> int:
    """How many honest calls one call of the attack computes: COST where it reads `__COST__`
    (on a GPU too, unless it repeats only on a CPU: `_COST if x.device.type == "cpu" else ...`)."""
    src = (ATTACKS / f"{name}.py").read_text()
    if "__COST__" not in src:
        return 1
    return COST if device == "cpu" or '_COST if x.device.type == "cpu"' not in src else 1


def speedup(t: Trace) -> float:
    p = t.evaluation.performance
    return p.speedup_factor if p is not None else 0.0


def latency(t: Trace) -> Optional[float]:
    p = t.evaluation.performance
    return p.latency_ms if p is not None else None


def witnessed_over_claim(t: Trace) -> Optional[float]:
    """The supervisor's own time of a call (its witness's estimate, timed from outside the runner)
    over the latency the trace records: ~1 or under for an honest call (a GPU's CUDA-graph replay
    drops launch gaps; honest rounds of 16 calls have read up to 2.1x), more for a forgery the
    bound let through (its slack: docs/security.md)."""
    w = ((t.evaluation.correctness.extra or {}) if t.evaluation.correctness else {}).get("witness")
    w = w if isinstance(w, dict) else {}
    g = w if "est_ms" in w else (w.get("graph") if isinstance(w.get("graph"), dict) else {})
    est, lat = g.get("est_ms"), latency(t)
    return round(est / lat, 3) if isinstance(est, (int, float)) and lat else None


def _first_line(log: Optional[str], limit: int = 160) -> str:
    return next((ln.strip() for ln in (log or "").splitlines() if ln.strip() and not ln.startswith("---")), "")[:limit]


def _ms(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.4g}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--only", default="", help="comma-separated attack names")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows here (after each attack)")
    ap.add_argument("--shard", default="", help="I/N: run every N-th attack from the I-th (1-based), so a "
                    "GPU table fits calls of limited length")
    ap.add_argument("--table-from", type=Path, nargs="*", default=None,
                    help="print the table of rows saved by earlier --json runs (shards) and exit")
    args = ap.parse_args()
    if args.table_from:
        rows = [r for f in args.table_from for r in json.loads(f.read_text())]
        print(f"\n## attacks from {', '.join(f.name for f in args.table_from)} ({len(rows)})\n")
        print_table(rows)
        return
    dev = "cuda:0" if args.device.startswith("cuda") else "cpu"
    lab = Lab(Path(tempfile.mkdtemp(prefix="fib-attack-table-")))
    if dev != "cpu":
        lab.config = lab.config.model_copy(update={"device": dev, "max_time_s": 0.1})
    lab.start()
    wl = GPU_WL if dev != "cpu" else WL
    names = [n for n in args.only.split(",") if n] or attacks(dev)
    if args.shard:
        i, n = (int(x) for x in args.shard.split("/"))
        names = names[i - 1::n]

    def honest(w=SMALL) -> Trace:
        return evaluate_via_worker(lab.definition, lab.good, w, lab.good_build, lab.config, dataset_root=lab.dataset)

    base = honest(wl)  # the honest solution of the attacks' work, their speedup's yardstick
    sandbox = str(base.evaluation.environment.model_dump().get("sandbox", "")) or "none"
    # a table measured without the sandbox (e.g. device_session.sh's unconfined fallback) says so
    print(f"sandbox of the honest runner: {sandbox}", flush=True)
    rows: List[Dict[str, Any]] = []
    t_all = time.monotonic()
    with env_vars({**LIMITS, **SECRET}):
        for name in names:
            before = honest()
            t0 = time.monotonic()
            subst = dict(SUBST.get(name) or {})
            t = lab.run(name, workload=wl, COST=COST, **subst)
            secs = time.monotonic() - t0
            after = honest()
            ev = t.evaluation
            fl = flags(t)
            suspect = bool(((ev.correctness.extra or {}) if ev.correctness else {}).get("suspect"))
            st = ev.status.value
            forgery = speedup(t) / (speedup(base) / work_of(name, dev)) if speedup(base) > 0 else 0.0
            gain = st == "PASSED" and forgery > GAIN_OVER_HONEST
            outcome = ("rejected" if st != "PASSED" else "flagged" if suspect else "GAIN" if gain else "contained")
            lb, la = latency(before), latency(after)
            ok = (after.evaluation.status.value == "PASSED" and lb is not None and la is not None
                  and la <= (1.25 * lb + 0.005 if dev != "cpu" else 3 * lb + 0.3))
            if is_honest_control(name) and st != "PASSED":  # the honest solution is the one harmed
                outcome, ok = "rejected", False
            rows.append({"attack": name, "class": attack_class(name), "status": st, "outcome": outcome,
                         "speedup": round(speedup(t), 3), "honest_speedup": round(speedup(base), 3),
                         "forgery": round(forgery, 3), "work": work_of(name, dev),
                         "witnessed_over_claim": witnessed_over_claim(t) if st == "PASSED" else None,
                         "flags": sorted(fl), "honest_ok": ok, "honest_ms": [lb, la], "seconds": round(secs, 1),
                         "witness": ((ev.correctness.extra or {}) if ev.correctness else {}).get("witness")})
            why = _first_line(ev.log)[:110]
            g = (rows[-1]["witness"] or {}).get("graph") if isinstance(rows[-1]["witness"], dict) else None
            if g:  # the GPU's device-time round: what it measured against what it allows
                why = f"graph k={g.get('k')} est {g.get('est_ms')} bound {g.get('bound_ms')} null {g.get('null_ms')} | " + why
            rows[-1]["why"] = why
            rows[-1]["message"] = _first_line(ev.log, 600)  # a dispute's numbers too (est, claim, bound)
            harmed = "" if ok else "".join(
                f"\n    honest {when}: {h.evaluation.status.value} {_first_line(h.evaluation.log)}"
                for when, h in (("before", before), ("after", after)) if h.evaluation.status.value != "PASSED")
            rows[-1]["honest_status"] = [before.evaluation.status.value, after.evaluation.status.value]
            print(f"{name:26s} {st:19s} {outcome:9s} x{speedup(t):<7.3g} forgery x{forgery:<6.3g} "
                  f"witnessed/claim {rows[-1]['witnessed_over_claim'] or '-'} honest {'ok' if ok else 'HARMED'} "
                  f"({_ms(lb)} -> {_ms(la)} ms) flags {','.join(sorted(fl))[:70]} [{secs:.1f} s]\n    {why}{harmed}", flush=True)
            if args.json:  # a call cut short by its time limit still leaves the rows it made
                args.json.write_text(json.dumps(rows, indent=1))
    shutdown_worker(dev, lab.config)
    lab.cleanup()

    print(f"\n## attacks on {dev} ({len(rows)} in {time.monotonic() - t_all:.0f} s; honest speedup x{speedup(base):.3g}; "
          f"sandbox {sandbox})\n")
    print_table(rows)


def print_table(rows: List[Dict[str, Any]]) -> None:
    """Attacks per class: tried, and what became of them."""
    print(f"{'class':22s} {'tried':>5s} {'rejected':>8s} {'flagged':>7s} {'contained':>9s} {'GAIN':>5s} {'honest harmed':>13s}"
          f" {'max forgery passed':>18s} {'max witnessed/claim passed':>26s}")
    for c in sorted({r["class"] for r in rows}) + ["all"]:
        rs = [r for r in rows if c in ("all", r["class"])]
        n = {o: sum(1 for r in rs if r["outcome"] == o) for o in ("rejected", "flagged", "contained", "GAIN")}
        passed = [r["forgery"] for r in rs if r["outcome"] in ("contained", "GAIN") and "forgery" in r]
        seen = [r["witnessed_over_claim"] for r in rs if r["outcome"] in ("contained", "GAIN") and r.get("witnessed_over_claim")]
        print(f"{c:22s} {len(rs):5d} {n['rejected']:8d} {n['flagged']:7d} {n['contained']:9d} {n['GAIN']:5d} "
              f"{sum(1 for r in rs if not r['honest_ok']):13d} {max(passed, default=0.0):18.3g} {max(seen, default=0.0):26.3g}")


if __name__ == "__main__":
    main()
