"""Cost of tracing on the calling thread, per traced call, and the device-to-host copy.

    python benchmarks/tracing_overhead.py                 # CPU here, or the current GPU
    python benchmarks/tracing_overhead.py --device cuda --batch 8

An @apply function with a no-op body (so the call itself costs nothing) is called back to back
with tracing in several configurations; medians of per-call host time over rounds:

- plain function / decorated, idle:     no tracing (the second is the wrapper's own cost)
- dump_none, keep_all:                  every call becomes a record (the 5 us target)
- dump_none, shape_only (steady state): the usual case after the first call of each shape
- dump_all, keep_all, snapshot=pinned:  non-blocking copy into pinned host memory + CUDA event
- dump_all, keep_all, snapshot=device_clone: clone on the GPU, the writer copies to the host
  (on a CPU both dump_all rows are a host clone)
- synchronous .cpu() on the calling thread: what upstream does, for comparison

The D2H table times the copy of one traced call's tensors with CUDA events (GPU only). The writer
thread runs during the measurement, as it does in a real program. Add --json FILE to keep numbers.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence

REPO = Path(__file__).resolve().parent.parent
DEF_FILE = REPO / "dataset" / "definitions" / "rmsnorm" / "rmsnorm_d4096.json"


CLOCK = time.perf_counter_ns


def per_call_us(f: Callable[[], Any], calls: int, rounds: int, sync: Callable[[], None], before_round: Callable[[], None] = lambda: None) -> List[float]:
    for _ in range(min(calls, 50)):
        f()
    out = []
    for _ in range(rounds):
        before_round()
        sync()
        t0 = CLOCK()
        for _ in range(calls):
            f()
        t1 = CLOCK()
        out.append((t1 - t0) / calls / 1e3)
    return out


def main(argv: Sequence[str] = ()) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="auto")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--dump-calls", type=int, default=200)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--json", default="")
    p.add_argument("--clock", choices=("wall", "thread"), default="wall",
                   help="thread: CPU time of the calling thread (for a loaded machine)")
    args = p.parse_args(list(argv) or None)
    global CLOCK
    CLOCK = time.thread_time_ns if args.clock == "thread" else time.perf_counter_ns

    import torch

    import flashinfer_bench as fb
    from flashinfer_bench import TracingConfig, apply
    from flashinfer_bench.apply import hardware_name

    dev, hw = hardware_name(args.device)
    cuda = dev.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    x = torch.randn(args.batch, 4096, device=dev).half()
    w = torch.randn(4096, device=dev).half()
    eps = 1e-6

    def body(x, weight, eps):
        return x

    traced = apply("rmsnorm_d4096")(body)
    rows: Dict[str, List[float]] = {}
    rows["plain function"] = per_call_us(lambda: body(x, w, eps), args.calls, args.rounds, sync)
    rows["decorated, idle"] = per_call_us(lambda: traced(x, w, eps), args.calls, args.rounds, sync)
    stats_out: Dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:

        def dataset(tag: str) -> Path:
            root = Path(tmp) / tag
            (root / "definitions" / "rmsnorm").mkdir(parents=True)
            (root / "definitions" / "rmsnorm" / "rmsnorm_d4096.json").write_text(DEF_FILE.read_text())
            return root

        configs = [
            ("dump_none, keep_all", TracingConfig(tensor_dump_policy="dump_none", dedup_policy="keep_all"), args.calls),
            ("dump_none, shape_only (steady state)", TracingConfig(tensor_dump_policy="dump_none", dedup_policy="shape_only"), args.calls),
            ("dump_all, keep_all, snapshot=pinned", TracingConfig(tensor_dump_policy="dump_all", dedup_policy="keep_all", snapshot="pinned"), args.dump_calls),
            ("dump_all, keep_all, snapshot=device_clone", TracingConfig(tensor_dump_policy="dump_all", dedup_policy="keep_all", snapshot="device_clone"), args.dump_calls),
        ]
        for i, (label, cfg, calls) in enumerate(configs):
            rt = fb.enable_tracing(cfg, dataset_dir=dataset(f"d{i}"), max_queue=10 ** 7, max_pending_bytes=1 << 34)
            # drain between rounds (untimed) so every round starts from an empty queue
            rows[label] = per_call_us(lambda: traced(x, w, eps), calls, args.rounds if calls == args.calls else max(3, args.rounds // 3), sync, rt.flush)
            t0 = time.perf_counter()
            fb.disable_tracing()
            stats_out[label] = {**rt.stats, "final_flush_s": time.perf_counter() - t0}

    def sync_copy() -> None:  # upstream: .cpu() of every dumped input on the calling thread
        x.detach().cpu().clone()
        w.detach().cpu().clone()

    rows["synchronous .cpu() of both inputs (upstream)"] = per_call_us(sync_copy, args.dump_calls, max(3, args.rounds // 3), sync)

    idle = statistics.median(rows["decorated, idle"])
    plain = statistics.median(rows["plain function"])
    print(f"tracing overhead on {hw} ({dev}), batch {args.batch} x 4096 fp16, {args.clock} clock; medians in us per call")
    print("| variant | per call | over the idle decorated call | over the plain function |")
    print("|---|---|---|---|")
    for label, v in rows.items():
        m = statistics.median(v)
        print(f"| {label} | {m:.2f} | {m - idle:.2f} | {m - plain:.2f} |")
    for label, s in stats_out.items():
        print(f"writer ({label}): {s}")

    d2h: Dict[str, float] = {}
    if cuda:
        nbytes = x.numel() * x.element_size() + w.numel() * w.element_size()
        bufs = [torch.empty(x.shape, dtype=x.dtype, pin_memory=True), torch.empty(w.shape, dtype=w.dtype, pin_memory=True)]
        times = []
        for _ in range(50):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            bufs[0].copy_(x, non_blocking=True)
            bufs[1].copy_(w, non_blocking=True)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1e3)
        med = statistics.median(times)
        d2h = {"bytes": nbytes, "copy_us_median": med, "GB_per_s": nbytes / (med * 1e-6) / 1e9}
        print("| D2H of one traced call (pinned, non-blocking) | bytes | GPU time us (median of 50) | GB/s |")
        print("|---|---|---|---|")
        print(f"| x[{args.batch},4096] + weight[4096] fp16 | {nbytes} | {med:.2f} | {d2h['GB_per_s']:.1f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows_us": rows, "writer": stats_out, "d2h": d2h, "hardware": hw}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
