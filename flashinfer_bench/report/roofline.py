"""Roofline numbers per trace: bytes and FLOPs moved, achieved GB/s and TFLOP/s, share of peak.

The evaluator stores its own measurements in `correctness.extra` (bytes, achieved_gbps,
peak_gbps measured on the device, ...). Traces without them (FlashInfer-Bench 0.1.2) get the
numbers computed here from the definition (`bytes_moved`, `flop_count`) and the median latency.
The peak is the device's measured one when any trace of that device carries it, else the
datasheet figure of a known device, else unknown (blank): a guess is never presented as a fact,
and `peak_source` says which one was used.
"""
from __future__ import annotations

import math
from typing import Dict, List

from ..data.devices import DATASHEET_PEAK_GBPS, datasheet_peak_gbps  # noqa: F401 - the report's API


def _pos(x: float) -> bool:
    return x is not None and isinstance(x, float) and math.isfinite(x) and x > 0


def achieved(amount: float, latency_ms: float, unit: float) -> float:
    """amount / time in `unit`s per second (GB/s: unit=1e9, TFLOP/s: unit=1e12); NaN if unknown."""
    if not (_pos(amount) and _pos(latency_ms)):
        return math.nan
    return amount / (latency_ms * 1e-3) / unit


def percent(value: float, peak: float) -> float:
    if not (_pos(value) and _pos(peak)):
        return math.nan
    return 100.0 * value / peak


def measured_peaks(rows: List[Dict[str, float]], key: str) -> Dict[str, float]:
    """Highest measured peak per hardware among rows (dicts with 'hardware' and `key`)."""
    out: Dict[str, float] = {}
    for r in rows:
        v = r.get(key, math.nan)
        if _pos(v):
            hw = r["hardware"]
            out[hw] = max(out.get(hw, 0.0), v)
    return out


ROOFLINE_COLUMNS = [
    "definition", "hardware", "solution", "workload_label", "batch", "latency_ms", "bytes",
    "flops", "achieved_gbps", "peak_gbps", "pct_of_peak_bw", "achieved_tflops", "peak_tflops",
    "pct_of_peak_flops", "peak_source", "flags", "workload",
]


def roofline_table(df):
    """Per timed trace of a traces frame: bytes, FLOPs, achieved rates and shares of peak."""
    import pandas as pd

    if df.empty:
        return pd.DataFrame(columns=ROOFLINE_COLUMNS)
    out = df[df["timed"]].copy()
    above = out["pct_of_peak_bw"].astype(float) > 100.0
    out.loc[above, "flags"] = out.loc[above, "flags"].map(lambda f: ", ".join([x for x in [f, "above peak bandwidth"] if x]))
    return out[ROOFLINE_COLUMNS].reset_index(drop=True)
