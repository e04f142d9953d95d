"""What GPU work left by a stopped process does to the next measurement, and what the quiet
probe (`bench/sandbox/quiet.py`) reads meanwhile.

A child process queues SPIN_S of a one-thread spin kernel and stops itself (SIGSTOP, as a runner
is stopped between its jobs). Meanwhile this process times (CUDA events, median and p90 of each
size) RMSNorm-like kernels of three sizes and the probe's launches, once on a quiet GPU and once
beside the stopped child's queue. Prints a table.

    python benchmarks/quiet_gate_probe.py [--spin-s 2]
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time

CHILD = r"""
import os, signal, sys, torch
dev = torch.cuda.current_device()
cycles = int(torch.cuda.get_device_properties(dev).clock_rate * 1e3 * float(sys.argv[1]))
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    torch.cuda._sleep(cycles)
print("queued", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
"""


def timed(torch, fn, n: int) -> list:
    out = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e3)
    return out


def probe(torch, n: int) -> list:
    walls = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        torch.cuda._sleep(2000)
        torch.cuda.synchronize()
        walls.append((time.perf_counter_ns() - t0) / 1e3)
    return walls


def measure(torch, xs) -> dict:
    row = {"probe": probe(torch, 9)}
    for name, x in xs.items():
        w = torch.ones(x.shape[-1], device=x.device, dtype=x.dtype)
        f = lambda: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).half()
        f()
        row[name] = timed(torch, f, 200)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spin-s", type=float, default=2.0)
    args = ap.parse_args()
    import torch

    torch.cuda.init()
    xs = {f"rms {b}x4096": torch.randn(b, 4096, device="cuda", dtype=torch.float16) for b in (8, 2048, 32768)}
    quiet = measure(torch, xs)
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(args.spin_s)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "queued"
    time.sleep(0.05)
    t0 = time.monotonic()
    busy = measure(torch, xs)
    took = time.monotonic() - t0
    p_after = []
    while time.monotonic() - t0 < args.spin_s + 1:
        p_after.append((round(time.monotonic() - t0, 3), statistics.median(probe(torch, 3))))
        time.sleep(0.1)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    print(f"device: {torch.cuda.get_device_name()}; child queued {args.spin_s} s of spin and stopped itself; busy phase took {took:.2f} s")
    print("| what (us) | quiet median | quiet p90 | busy median | busy p90 | busy max |")
    print("|---|---:|---:|---:|---:|---:|")
    for k in quiet:
        q, b = sorted(quiet[k]), sorted(busy[k])
        p90 = lambda v: v[int(0.9 * (len(v) - 1))]
        print(f"| {k} | {statistics.median(q):.1f} | {p90(q):.1f} | {statistics.median(b):.1f} | {p90(b):.1f} | {max(b):.1f} |")
    print("probe median over time since the queue (s, us):", p_after)


if __name__ == "__main__":
    main()
