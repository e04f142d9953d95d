"""This machine's devices, decided in one place: which device `auto` means, and the hardware name
a trace records (`evaluation.environment.hardware`), which apply() matches traces by.

Standard library at import; torch only where a CUDA device must be asked.
"""
from __future__ import annotations

import os
import platform
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Tuple


def detect_device(requested: str) -> str:
    """'auto' becomes 'cuda' when an NVIDIA GPU is visible, else 'cpu'; no torch import (the
    pipeline plans its DAG with it)."""
    if requested != "auto":
        return requested
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return "cpu"
    if Path("/dev/nvidia0").exists() or (shutil.which("nvidia-smi") and Path("/proc/driver/nvidia").exists()):
        return "cuda"
    return "cpu"


def resolve_device(device: str = "auto") -> str:
    """'auto' -> 'cuda:<current>' when this process can use CUDA, else 'cpu'; 'cuda' -> 'cuda:<current>'."""
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        device = f"cuda:{torch.cuda.current_device()}"
    return device


@lru_cache(maxsize=None)
def cpu_model_name() -> str:
    """The CPU part of `hardware` ("CPU " + this)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def hardware_name(device: str = "auto") -> Tuple[str, str]:
    """(resolved device, hardware name): torch's CUDA device name, or "CPU " + cpu_model_name()."""
    dev = resolve_device(device)
    if dev.startswith("cuda"):
        import torch

        index = int(dev.split(":", 1)[1]) if ":" in dev else torch.cuda.current_device()
        return dev, torch.cuda.get_device_name(index)
    return dev, f"CPU {cpu_model_name()}"
