"""Roofline: bytes and FLOPs of a call against the device's measured peaks.

Peak bandwidth is the best of three patterns (device-to-device copy, a read-only reduction, a
fill), each counting the bytes it must move; on an H100 a plain copy under-states what a
well-made kernel reaches by about 6%, which would put honest kernels over 100% of "peak".
Peak FLOP/s is a large fp16 matrix product (fp32 on the CPU). Both are measured once per device
and cached as JSON under the cache directory, keyed by the device name.

A time below bytes / (1.1 * peak bandwidth) (or, where the definition counts FLOPs and no input is
narrower than 16 bits, flops / (1.1 * peak FLOP/s)) is physically impossible with a flushed L2:
the trace is marked suspect with the flag "below_roofline_floor". Not applied on the CPU, whose
caches we do not flush.
"""
from __future__ import annotations

import json
import math
import re
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import torch

from ..data import Definition
from ..data.devices import floor_gbps
from ..data.io import atomic_write_json

FLOOR_MARGIN = 1.1
PEAKS_VERSION = 1


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "device"


def _time_cuda(fn: Callable[[], Any], reps: int) -> float:
    """Median seconds per call, events around each call after two warm-up calls."""
    for _ in range(2):
        fn()
    times = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    return statistics.median(times)


def _time_host(fn: Callable[[], Any], reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _bandwidths(device: torch.device, nbytes: int, timer: Callable[[Callable[[], Any], int], float], reps: int) -> Dict[str, float]:
    src = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    srcf, dstf = src.view(torch.float32), dst.view(torch.float32)
    return {
        "copy": 2 * nbytes / timer(lambda: dst.copy_(src), reps) / 1e9,
        "read_reduce": nbytes / timer(lambda: srcf.sum(), reps) / 1e9,
        "fill": nbytes / timer(lambda: dstf.fill_(1.0), reps) / 1e9,
    }


def _matmul_seconds(device: torch.device, n: int, dt: torch.dtype, timer: Callable[[Callable[[], Any], int], float], reps: int) -> float:
    a = torch.randn(n, n, device=device, dtype=dt)
    b = torch.randn(n, n, device=device, dtype=dt)
    return timer(lambda: a @ b, reps)


def measure_peaks(device: torch.device) -> Dict[str, Any]:
    """Measure peak bandwidth (best pattern) and matmul throughput on `device`."""
    cuda = device.type == "cuda"
    if cuda:
        free, _ = torch.cuda.mem_get_info(device)
        nbytes = int(min(512 << 20, max(32 << 20, free // 8)))
        timer, reps, n, dt = _time_cuda, 10, 8192, torch.float16
    else:
        nbytes, timer, reps, n, dt = 64 << 20, _time_host, 5, 1024, torch.float32
    patterns = _bandwidths(device, nbytes, timer, reps)
    mm_s = _matmul_seconds(device, n, dt, timer, 5 if cuda else 3)
    if cuda:
        torch.cuda.empty_cache()
    best = max(patterns, key=lambda k: patterns[k])
    return {
        "version": PEAKS_VERSION,
        "peak_gbps": patterns[best],
        "peak_pattern": best,
        "patterns_gbps": patterns,
        "peak_tflops": 2 * n**3 / mm_s / 1e12,
        "matmul": f"{n}x{n}x{n} {str(dt).removeprefix('torch.')}",
        "bytes": nbytes,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def load_or_measure_peaks(device: torch.device, device_name: str, cache_dir: Path) -> Dict[str, Any]:
    """Peaks of this device model, from the cache file or measured now and cached."""
    path = Path(cache_dir) / "roofline" / f"peaks-{_slug(device_name)}.json"
    try:
        data = json.loads(path.read_text())
        if data.get("version") == PEAKS_VERSION and data.get("peak_gbps", 0) > 0:
            data["cached"] = True
            return data
    except (OSError, ValueError):
        pass
    data = measure_peaks(device)
    data["device_name"] = device_name
    try:
        atomic_write_json(path, data)
    except OSError:
        pass  # an unwritable cache costs a re-measurement next time, nothing else
    data["cached"] = False
    return data


def _narrow_inputs(definition: Definition) -> bool:
    return any(s.dtype.bits < 16 for s in definition.inputs.values())


def roofline(
    definition: Definition,
    axes: Dict[str, int],
    latency_ms: float,
    peaks: Optional[Dict[str, Any]],
    apply_floor: bool,
) -> Dict[str, Any]:
    """Achieved rates, share of peak, the physical floor and whether `latency_ms` is under it."""
    var = {k: v for k, v in axes.items() if k in definition.var_axes}
    nbytes = definition.bytes_moved(var)
    try:
        flops = definition.flop_count(var)
    except (ValueError, NameError, ZeroDivisionError, TypeError):
        flops = None
    out: Dict[str, Any] = {"bytes": int(nbytes), "flops": flops}
    sec = latency_ms / 1e3 if latency_ms and latency_ms > 0 else math.nan
    out["achieved_gbps"] = nbytes / sec / 1e9 if sec == sec else None
    out["achieved_tflops"] = flops / sec / 1e12 if (flops is not None and sec == sec) else None
    flags: List[str] = []
    if peaks:
        pbw, pfl = peaks.get("peak_gbps"), peaks.get("peak_tflops")
        out["peak_gbps"], out["peak_tflops"] = pbw, pfl
        out["pct_of_peak_bw"] = 100.0 * out["achieved_gbps"] / pbw if (pbw and out["achieved_gbps"] is not None) else None
        out["pct_of_peak_flops"] = (
            100.0 * out["achieved_tflops"] / pfl if (pfl and out["achieved_tflops"] is not None) else None
        )
        fbw = floor_gbps(pbw, peaks.get("device_name"))
        floor_s = nbytes / (FLOOR_MARGIN * fbw * 1e9) if fbw else 0.0
        if flops and pfl and not _narrow_inputs(definition):
            floor_s = max(floor_s, flops / (FLOOR_MARGIN * pfl * 1e12))
        out["floor_ms"] = floor_s * 1e3
        if apply_floor and sec == sec and sec < floor_s:
            flags.append("below_roofline_floor")
    out["flags"] = flags
    return out
