"""What a builder receives (a job dict written by the parent) and how it reports."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict

from ..result import COMPILE_ERROR, OK, SKIPPED

RESULT = "child_result.json"  # what the child writes next to its job file


class BuildFailure(Exception):
    """The solution does not build: COMPILE_ERROR with this message (details go to the log)."""

    def __init__(self, message: str, details: str = ""):
        super().__init__(message)
        self.message = message
        self.details = details


class BuildSkipped(Exception):
    """The build cannot be attempted on this machine (missing toolchain): SKIPPED."""


@dataclass
class Outcome:
    status: str
    message: str = ""
    details: str = ""
    info: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def ok(cls, **info: Any) -> "Outcome":
        return cls(OK, info=info)

    @classmethod
    def failed(cls, message: str, details: str = "") -> "Outcome":
        return cls(COMPILE_ERROR, message, details)

    @classmethod
    def skipped(cls, message: str) -> "Outcome":
        return cls(SKIPPED, message)


def src_dir(job: Dict[str, Any]) -> Path:
    return Path(job["src_dir"])


def work_dir(job: Dict[str, Any]) -> Path:
    return Path(job["work_dir"])


def torch_cuda_available() -> bool:
    """Whether this process can run CUDA code (False when torch is absent or CPU-only)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
