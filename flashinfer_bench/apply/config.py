"""ApplyConfig: how apply() picks a solution and what it does on a miss."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Literal, Optional, Sequence

MissPolicy = Literal["nearest", "definition_best", "fallback"]
_POLICIES = ("nearest", "definition_best", "fallback")


@dataclass(frozen=True)
class ApplyConfig:
    """Settings of one apply runtime. Read once at enable; never on the hot path.

    on_miss: what a call whose var-axis values were never measured gets.
      "nearest"          the winner of the closest measured key, if it lies within
                         `max_log2_distance` (max over var axes of |log2 a - log2 b|), else fallback;
      "definition_best"  the solution that wins the most measured keys of the definition;
      "fallback"         the decorated function's own body.
    noise_aware: a fastest solution whose latency interval (p10..p90, else median +- IQR/2)
      overlaps another's is not a clear win; among the overlapping ones the solution that wins the
      most keys of the definition is chosen (ties: lower median). False: plain lowest median.
    max_atol / max_rtol: optional extra filters on the recorded errors. None (default) trusts the
      evaluator's PASSED verdict, made under its own tolerances.
    hardware: the hardware name traces must carry; None: this device's name as the evaluator
      writes it. device: "auto" (current CUDA device, else CPU), "cpu", "cuda", "cuda:N".
    definitions / solutions: optional allowlists. cache_dir: artifact cache for the builds.
    strict_key: the memo key of a call reads the shape of every tensor argument whose shape has
      a var axis, plus the first tensor's dtype and device kind; everything else (a weight's
      shape, the other dtypes) is validated on the first call of each key only. True puts every
      tensor's shape and dtype in the key (about 0.1-0.3 us more per tensor).
    per_definition: overrides by definition name (an ApplyConfig each).
    """

    on_miss: MissPolicy = "nearest"
    max_log2_distance: float = 1.0
    noise_aware: bool = True
    max_atol: Optional[float] = None
    max_rtol: Optional[float] = None
    hardware: Optional[str] = None
    device: str = "auto"
    definitions: Optional[Sequence[str]] = None
    solutions: Optional[Sequence[str]] = None
    cache_dir: Optional[Path] = None
    strict_key: bool = False
    per_definition: Dict[str, "ApplyConfig"] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.on_miss not in _POLICIES:
            raise ValueError(f"on_miss must be one of {_POLICIES}, got {self.on_miss!r}")
        if not self.max_log2_distance >= 0:
            raise ValueError(f"max_log2_distance must be >= 0, got {self.max_log2_distance!r}")

    def for_definition(self, name: str) -> "ApplyConfig":
        return self.per_definition.get(name, self)
