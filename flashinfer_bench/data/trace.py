"""Trace and Evaluation: the result of one solution on one workload.

Written in upstream's nested form; the seeds' flat keyword form is accepted on construction and
exposed as read-only properties.
"""
from __future__ import annotations

import math
from datetime import datetime, timezone
from enum import Enum
from typing import Any, ClassVar, Dict, FrozenSet, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .fields import NameStr
from .workload import Workload


class EvaluationStatus(str, Enum):
    PASSED = "PASSED"
    INCORRECT_SHAPE = "INCORRECT_SHAPE"
    INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
    INCORRECT_DTYPE = "INCORRECT_DTYPE"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    COMPILE_ERROR = "COMPILE_ERROR"
    TIMEOUT = "TIMEOUT"

    def __str__(self) -> str:
        return self.value


def _nan_ok(v: Any) -> Any:
    if isinstance(v, str) and v.lower() in ("nan", "inf", "infinity", "-inf"):
        return float(v)
    return v


class Correctness(BaseModel):
    model_config = ConfigDict(extra="allow", ser_json_inf_nan="strings")
    max_relative_error: float = 0.0
    max_absolute_error: float = 0.0
    extra: Optional[Dict[str, Any]] = None

    _nan = field_validator("max_relative_error", "max_absolute_error", mode="before")(_nan_ok)


class Performance(BaseModel):
    model_config = ConfigDict(extra="allow", ser_json_inf_nan="strings")
    latency_ms: float = 0.0
    reference_latency_ms: float = 0.0
    speedup_factor: float = 0.0

    _nan = field_validator("latency_ms", "reference_latency_ms", "speedup_factor", mode="before")(
        _nan_ok
    )


class Environment(BaseModel):
    model_config = ConfigDict(extra="allow")
    hardware: str = Field(min_length=1)
    libs: Dict[str, str] = Field(default_factory=dict)

    # Our extra keys (docs/internals.md): kept as extras so upstream's files stay unchanged on a
    # round trip; listed so that `validate` does not warn about them as unknown fields.
    known_extra_fields: ClassVar[FrozenSet[str]] = frozenset({
        "device", "device_index", "gpu_uuid", "sm_count", "l2_bytes", "clocks_start",
        "clocks_end", "hostname", "seed", "start_time", "end_time", "worker_pid", "sandbox",
        "cpu_count", "torch_threads", "memory_bytes", "compute_capability", "clocks_at_worker_start",
        "peaks_error", "solution_hash",
    })


_FLAT_CORRECTNESS = ("max_relative_error", "max_absolute_error")
_FLAT_PERFORMANCE = ("latency_ms", "reference_latency_ms", "speedup_factor")


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


class Evaluation(BaseModel):
    model_config = ConfigDict(extra="allow", ser_json_inf_nan="strings")
    status: EvaluationStatus
    environment: Environment
    timestamp: str = Field(default_factory=now_iso, min_length=1)
    log: str = ""
    correctness: Optional[Correctness] = None
    performance: Optional[Performance] = None

    @model_validator(mode="before")
    @classmethod
    def _accept_flat(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        flat_c = {k: data.pop(k) for k in _FLAT_CORRECTNESS if k in data}
        flat_p = {k: data.pop(k) for k in _FLAT_PERFORMANCE if k in data}
        hardware = data.pop("hardware", None)
        libs = data.pop("libs", None)
        if flat_c:
            base = data.get("correctness") or {}
            base = base.model_dump() if isinstance(base, BaseModel) else dict(base)
            data["correctness"] = {**base, **flat_c}
        if flat_p:
            base = data.get("performance") or {}
            base = base.model_dump() if isinstance(base, BaseModel) else dict(base)
            data["performance"] = {**base, **flat_p}
        if "environment" not in data:
            data["environment"] = {"hardware": hardware or "unknown", "libs": libs or {}}
        return data

    # flat read access used by the seeds
    @property
    def max_relative_error(self) -> Optional[float]:
        return self.correctness.max_relative_error if self.correctness else None

    @property
    def max_absolute_error(self) -> Optional[float]:
        return self.correctness.max_absolute_error if self.correctness else None

    @property
    def latency_ms(self) -> Optional[float]:
        return self.performance.latency_ms if self.performance else None

    @property
    def reference_latency_ms(self) -> Optional[float]:
        return self.performance.reference_latency_ms if self.performance else None

    @property
    def speedup_factor(self) -> Optional[float]:
        return self.performance.speedup_factor if self.performance else None

    @property
    def hardware(self) -> str:
        return self.environment.hardware

    @property
    def extra(self) -> Dict[str, Any]:
        """Our measurements beyond upstream's fields (stored in correctness.extra)."""
        if self.correctness and self.correctness.extra:
            return self.correctness.extra
        return {}

    @property
    def passed(self) -> bool:
        return self.status == EvaluationStatus.PASSED

    @model_validator(mode="after")
    def _status_fields(self) -> "Evaluation":
        """Upstream's rule, so every trace we write loads in FlashInfer-Bench 0.1.2."""
        s = self.status
        if s == EvaluationStatus.PASSED:
            if self.correctness is None or self.performance is None:
                raise ValueError("a PASSED evaluation needs correctness and performance")
        elif s == EvaluationStatus.INCORRECT_NUMERICAL:
            if self.correctness is None:
                raise ValueError("an INCORRECT_NUMERICAL evaluation needs correctness")
            if self.performance is not None:
                raise ValueError("an INCORRECT_NUMERICAL evaluation has no performance")
        elif self.correctness is not None or self.performance is not None:
            raise ValueError(f"a {s.value} evaluation has neither correctness nor performance")
        return self


class Trace(BaseModel):
    """A workload line (solution and evaluation null) or a result line."""

    model_config = ConfigDict(extra="allow")
    definition: NameStr = Field(min_length=1)
    workload: Workload
    solution: Optional[NameStr] = None
    evaluation: Optional[Evaluation] = None

    @property
    def is_workload(self) -> bool:
        return self.solution is None and self.evaluation is None

    def is_workload_trace(self) -> bool:
        """A workload line (no solution, no evaluation): 0.1.2's name for `is_workload`."""
        return self.is_workload

    def is_successful(self) -> bool:
        """A result line whose evaluation PASSED (0.1.2's API); False for workload lines."""
        return self.evaluation is not None and self.evaluation.status == EvaluationStatus.PASSED

    def to_json(self) -> str:
        return self.model_dump_json()

    def latency(self) -> float:
        if self.evaluation is None or self.evaluation.performance is None:
            return math.nan
        return self.evaluation.performance.latency_ms
