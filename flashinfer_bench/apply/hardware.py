"""This device's name as the evaluator records it in `evaluation.environment.hardware`.

apply() only trusts traces measured on the hardware it runs on, so the two must spell the name
the same way. Both sides use torch's CUDA device name, or "CPU " + bench.environment.cpu_model_name().
"""
from __future__ import annotations

from typing import Tuple

from flashinfer_bench.bench.environment import cpu_model_name


def resolve_device(device: str = "auto") -> str:
    """'auto' -> 'cuda:<current>' when CUDA is available, else 'cpu'; 'cuda' -> 'cuda:<current>'."""
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        device = f"cuda:{torch.cuda.current_device()}"
    return device


def _local_hardware_name(device: str) -> str:
    if device.startswith("cuda"):
        import torch

        index = int(device.split(":", 1)[1]) if ":" in device else torch.cuda.current_device()
        return torch.cuda.get_device_name(index)
    return f"CPU {cpu_model_name()}"


def hardware_name(device: str = "auto") -> Tuple[str, str]:
    """(resolved device, hardware name) for a device string."""
    dev = resolve_device(device)
    return dev, _local_hardware_name(dev)
