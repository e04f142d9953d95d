"""Dispatch cost of apply(): an apply-wrapped call minus a direct call of the same solution.

    python benchmarks/apply_overhead.py                       # CPU here, or the current GPU
    python benchmarks/apply_overhead.py --device cuda --upstream-path /tmp/upstream

A temporary dataset holds the rmsnorm_d4096 definition, one solution and a PASSED trace for this
device; apply routes the decorated call to that solution. Per variant, `--calls` back-to-back
calls are timed on the host (`--rounds` rounds, variants interleaved in each round, GPU
synchronised between rounds only), and the table shows medians per call.

- direct fn:        the solution's entry function called directly
- direct Runnable:  the same through its Runnable (native convention: what apply calls)
- ours apply:       the @apply-decorated function with enable_apply active
- dispatch:         ours apply - direct Runnable (the work apply adds: the target is <= 2 us)
- vs fn:            ours apply - direct fn (comparable with upstream's column)
- idle wrapper:     decorated call with apply disabled - the plain function (a no-op body)
- upstream 0.1.2:   its apply on the same dataset and call, minus the direct fn, measured in a
                    subprocess with --upstream-path (a `pip install --target DIR
                    flashinfer-bench==0.1.2 docstring-parser` folder) first on sys.path; the
                    column says "n/a" when that import fails or is not given.
Solutions: "noop" (returns its input: the call costs almost nothing, so the difference is
dispatch alone) and the dataset's PyTorch rmsnorm. Add --json FILE to keep the numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence

REPO = Path(__file__).resolve().parent.parent
DEF_FILE = REPO / "dataset" / "definitions" / "rmsnorm" / "rmsnorm_d4096.json"
TORCH_SOLUTION = REPO / "dataset" / "solutions" / "example" / "rmsnorm" / "rmsnorm_d4096" / "rmsnorm_torch.json"
NOOP_SOURCE = "def run(x, weight, eps):\n    return x\n"


def _solutions() -> Dict[str, dict]:
    torch_sol = json.loads(TORCH_SOLUTION.read_text())
    noop = {
        "name": "rmsnorm_noop",
        "definition": "rmsnorm_d4096",
        "author": "overhead",
        "description": "returns its input: isolates the dispatch cost",
        "spec": {"language": "python", "target_hardware": ["cuda"], "entry_point": "main.py::run",
                 "destination_passing_style": False},
        "sources": [{"path": "main.py", "content": NOOP_SOURCE}],
    }
    return {"noop": noop, "torch": torch_sol}


def make_dataset(root: Path, solution: dict, hardware: str, batch: int) -> None:
    d = json.loads(DEF_FILE.read_text())
    (root / "definitions" / "rmsnorm").mkdir(parents=True)
    (root / "definitions" / "rmsnorm" / "rmsnorm_d4096.json").write_text(json.dumps(d))
    sdir = root / "solutions" / solution["author"] / "rmsnorm" / "rmsnorm_d4096"
    sdir.mkdir(parents=True)
    (sdir / f"{solution['name']}.json").write_text(json.dumps(solution))
    trace = {
        "definition": "rmsnorm_d4096",
        "workload": {"uuid": f"overhead-b{batch}", "axes": {"batch_size": batch}, "inputs": {}},
        "solution": solution["name"],
        "evaluation": {
            "status": "PASSED",
            "environment": {"hardware": hardware, "libs": {}},
            "timestamp": "2026-01-01T00:00:00Z",
            "log": "",
            "correctness": {"max_relative_error": 0.0, "max_absolute_error": 0.0},
            "performance": {"latency_ms": 0.01, "reference_latency_ms": 0.02, "speedup_factor": 2.0},
        },
    }
    (root / "traces" / "rmsnorm").mkdir(parents=True)
    (root / "traces" / "rmsnorm" / "rmsnorm_d4096.jsonl").write_text(json.dumps(trace) + "\n")


def _load_entry(solution: dict) -> Callable[..., Any]:
    ns: Dict[str, Any] = {}
    exec(compile(solution["sources"][0]["content"], f"<{solution['name']}>", "exec"), ns)  # noqa: S102
    return ns["run"]


CLOCK = time.perf_counter_ns
CLOCK_NAME = ["wall"]


def time_variants(variants: Dict[str, Callable[[], Any]], calls: int, rounds: int, sync: Callable[[], None]) -> Dict[str, List[float]]:
    """Per-call host time (us) of each variant, one sample per round, variants interleaved."""
    out: Dict[str, List[float]] = {k: [] for k in variants}
    for f in variants.values():  # warm-up (first call resolves routes, fills caches)
        for _ in range(min(calls, 200)):
            f()
    sync()
    for _ in range(rounds):
        for name, f in variants.items():
            sync()
            t0 = CLOCK()
            for _ in range(calls):
                f()
            t1 = CLOCK()
            out[name].append((t1 - t0) / calls / 1e3)
        sync()
    return out


def _inputs(device: str, batch: int):
    import torch

    g = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(batch, 4096, generator=g).half().to(device)
    w = torch.randn(4096, generator=g).half().to(device)
    return x, w, 1e-6


def _sync_for(device: str) -> Callable[[], None]:
    import torch

    if device.startswith("cuda"):
        return torch.cuda.synchronize
    return lambda: None


def measure_ours(device: str, batch: int, calls: int, rounds: int, which: str) -> Dict[str, Any]:
    import torch  # noqa: F401

    from flashinfer_bench.apply import ApplyConfig, apply, disable_apply, enable_apply, hardware_name, stats

    dev, hw = hardware_name(device)
    sol = _solutions()[which]
    fn = _load_entry(sol)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ds"
        make_dataset(root, sol, hw, batch)
        x, w, eps = _inputs(dev, batch)

        def fallback(x, weight, eps):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()

        wrapped = apply("rmsnorm_d4096")(fallback)
        rt = enable_apply(root, ApplyConfig(device=dev))
        runnable = rt._built[sol["name"]].runnable
        native = runnable.__call__
        sync = _sync_for(dev)
        samples = time_variants(
            {
                "direct_fn": lambda: fn(x, w, eps),
                "direct_runnable": lambda: native(x, w, eps),
                "ours_apply": lambda: wrapped(x, w, eps),
            },
            calls, rounds, sync,
        )
        routed = stats().get("rmsnorm_d4096", {})
        disable_apply()
        def noop(x, weight, eps):
            return x

        idle_wrapped = apply("rmsnorm_d4096")(noop)
        idle = time_variants(
            {"fallback": lambda: noop(x, w, eps), "idle_wrapper": lambda: idle_wrapped(x, w, eps)},
            calls, max(3, rounds // 3), sync,
        )
    med = {k: statistics.median(v) for k, v in {**samples, **idle}.items()}
    paired = [a - b for a, b in zip(samples["ours_apply"], samples["direct_runnable"])]
    return {
        "device": dev, "hardware": hw, "solution": sol["name"], "batch": batch, "medians_us": med,
        "dispatch_us": med["ours_apply"] - med["direct_runnable"],
        "dispatch_paired_median_us": statistics.median(paired),
        "vs_fn_us": med["ours_apply"] - med["direct_fn"],
        "idle_wrapper_us": med["idle_wrapper"] - med["fallback"],
        "routed": routed,
    }


def measure_upstream_worker(args: argparse.Namespace) -> None:
    """Runs in a subprocess whose sys.path starts with upstream 0.1.2."""
    import torch

    import flashinfer_bench as up

    where = str(Path(up.__file__).resolve())
    if where.startswith(str(REPO)):
        print(json.dumps({"skip": "flashinfer_bench resolves to this repository, not upstream"}))
        return
    sol = _solutions()[args.solution]
    fn = _load_entry(sol)
    root = Path(args.dataset)
    dev = args.device
    x, w, eps = _inputs(dev, args.batch)

    def fallback(x, weight, eps):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()

    wrapped = up.apply("rmsnorm_d4096")(fallback)
    up.enable_apply(str(root))
    # check that upstream really routes to the solution (noop returns its input object)
    routed = wrapped(x, w, eps) is x if args.solution == "noop" else None
    samples = time_variants(
        {"direct_fn": lambda: fn(x, w, eps), "upstream_apply": lambda: wrapped(x, w, eps)},
        args.calls, args.rounds, _sync_for(dev),
    )
    med = {k: statistics.median(v) for k, v in samples.items()}
    print(json.dumps({"medians_us": med, "vs_fn_us": med["upstream_apply"] - med["direct_fn"], "routed": routed}))


def measure_upstream(upstream_path: str, device: str, batch: int, calls: int, rounds: int, which: str, hw: str) -> Dict[str, Any]:
    if not upstream_path:
        return {"skip": "no --upstream-path given"}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ds"
        make_dataset(root, _solutions()[which], hw, batch)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([upstream_path] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env["FIB_CACHE_PATH"] = str(Path(tmp) / "cache")
        env.pop("FIB_ENABLE_APPLY", None)
        env.pop("FIB_ENABLE_TRACING", None)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--upstream-worker", "--dataset", str(root),
               "--device", device, "--batch", str(batch), "--calls", str(calls), "--rounds", str(rounds),
               "--solution", which, "--clock", CLOCK_NAME[0]]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp, timeout=600)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        return {"skip": f"upstream not importable or failed: {last}"}
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"skip": f"unexpected upstream output: {r.stdout[-300:]}"}


def main(argv: Sequence[str] = ()) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="auto")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--solutions", default="noop,torch")
    p.add_argument("--upstream-path", default=os.environ.get("FIB_UPSTREAM_PATH", ""))
    p.add_argument("--json", default="")
    p.add_argument("--clock", choices=("wall", "thread"), default="wall",
                   help="thread: CPU time of the calling thread (for a loaded machine; not for GPU work)")
    p.add_argument("--upstream-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--dataset", default="", help=argparse.SUPPRESS)
    p.add_argument("--solution", default="noop", help=argparse.SUPPRESS)
    args = p.parse_args(list(argv) or None)
    global CLOCK
    CLOCK = time.thread_time_ns if args.clock == "thread" else time.perf_counter_ns
    CLOCK_NAME[0] = args.clock
    if args.upstream_worker:
        measure_upstream_worker(args)
        return 0
    os.environ.setdefault("FIB_CACHE_PATH", tempfile.mkdtemp(prefix="fib-overhead-cache-"))
    rows = []
    for which in args.solutions.split(","):
        ours = measure_ours(args.device, args.batch, args.calls, args.rounds, which)
        up = measure_upstream(args.upstream_path, ours["device"], args.batch, args.calls, args.rounds, which, ours["hardware"])
        rows.append({"ours": ours, "upstream": up})
    print(f"apply dispatch overhead on {rows[0]['ours']['hardware']} ({rows[0]['ours']['device']}), "
          f"batch {args.batch}, {args.calls} calls x {args.rounds} rounds, {args.clock} clock; medians in us per call")
    hdr = ("solution", "direct fn", "direct Runnable", "ours apply", "dispatch", "paired", "vs fn",
           "idle wrapper", "upstream apply", "upstream vs fn")
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for row in rows:
        o, u = row["ours"], row["upstream"]
        m = o["medians_us"]
        if "skip" in u:
            up_cells = ["n/a", "n/a"]
        else:
            up_cells = [f"{u['medians_us']['upstream_apply']:.2f}", f"{u['vs_fn_us']:.2f}"]
        cells = [o["solution"], f"{m['direct_fn']:.2f}", f"{m['direct_runnable']:.2f}", f"{m['ours_apply']:.2f}",
                 f"{o['dispatch_us']:.2f}", f"{o['dispatch_paired_median_us']:.2f}", f"{o['vs_fn_us']:.2f}",
                 f"{o['idle_wrapper_us']:.2f}", *up_cells]
        print("| " + " | ".join(cells) + " |")
    for row in rows:
        if "skip" in row["upstream"]:
            print(f"upstream column skipped for {row['ours']['solution']}: {row['upstream']['skip']}")
            break
    for row in rows:
        print(f"routed calls ({row['ours']['solution']}): {row['ours']['routed']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
