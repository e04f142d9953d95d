"""Nominal figures of known GPUs (no torch): what the report falls back on where no peak was
measured, and the highest bandwidth the physical-floor checks allow an honest kernel."""
from __future__ import annotations

import functools
import math
import re
from typing import List, Optional, Tuple

# Datasheet DRAM bandwidth in GB/s, matched against the device name torch reports.
# Ordered: the first pattern that matches wins, so specific variants come before generic names.
DATASHEET_PEAK_GBPS: List[Tuple[str, float]] = [
    (r"\bH100\b.*\bPCIe\b", 2000.0),
    (r"\bH100\b.*\bNVL\b", 3900.0),
    (r"\bH100\b.*HBM3", 3350.0),
    (r"\bH100\b.*\bSXM", 3350.0),
    (r"\bH200\b", 4800.0),
    (r"\bA100\b.*80GB.*PCIe", 1935.0),
    (r"\bA100\b.*SXM4-80GB", 2039.0),
    (r"\bA100\b.*40GB", 1555.0),
    (r"\bL40S\b", 864.0),
    (r"\bB200\b", 8000.0),
]


_NAMES = ("H100", "H200", "A100", "L40S", "B200")  # a name holding none of these matches no pattern


@functools.lru_cache(maxsize=4096)
def datasheet_peak_gbps(hardware: str) -> Optional[float]:
    """Nominal DRAM bandwidth of a known device, None when the name is not known."""
    if not any(n in (hardware or "") for n in _NAMES):
        return None
    for pattern, gbps in DATASHEET_PEAK_GBPS:
        if re.search(pattern, hardware or ""):
            return gbps
    return None


def floor_gbps(measured_gbps: Optional[float], device_name: Optional[str]) -> Optional[float]:
    """The bandwidth a physical-floor check divides by: the larger of the measured peak and the
    datasheet's. The measured one (a copy, a reduction, a fill) is what our kernels reach, and an
    honest kernel may beat it: a fused RMSNorm at 4.2 TB/s on an H200 whose copy measured 3.8."""
    sheet = datasheet_peak_gbps(device_name or "")
    vals = [v for v in (measured_gbps, sheet) if isinstance(v, (int, float)) and math.isfinite(v) and v > 0]
    return max(vals) if vals else None
