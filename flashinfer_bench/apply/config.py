"""ApplyConfig: how apply() picks a solution and what it does on a miss."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, Literal, Optional, Sequence, Union

from ..tracing.config import PerDefinitionRegistry

MissPolicy = Literal["nearest", "definition_best", "fallback"]
_POLICIES = ("nearest", "definition_best", "fallback")
# FlashInfer-Bench 0.1.2's on_miss_policy values and ours
_UPSTREAM_POLICIES = {"fallback_only": "fallback", "use_def_best": "definition_best"}


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
    require_speedup: a solution serves a key only where it was measurably faster than the
      definition's reference (p90 below the reference's median - IQR/2, not flagged
      speedup_within_noise); a measured key no solution beats stays with the fallback, and so do
      the calls `nearest` maps to it. False: any PASSED solution may win (0.1.2's behaviour).
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
    on_miss_policy: FlashInfer-Bench 0.1.2's spelling of on_miss, which it sets when given:
      "fallback_only" (= "fallback") or "use_def_best" (= "definition_best").
    aot_ratio: as in 0.1.2, the share of a definition's winners (ranked by the keys they win)
      built at enable, at least one when > 0; the others are built at the first call that
      routes to them. 1.0 (default) builds every winner ahead of time, 0.0 none.
    """

    on_miss: MissPolicy = "nearest"
    max_log2_distance: float = 1.0
    noise_aware: bool = True
    require_speedup: bool = True
    max_atol: Optional[float] = None
    max_rtol: Optional[float] = None
    hardware: Optional[str] = None
    device: str = "auto"
    definitions: Optional[Sequence[str]] = None
    solutions: Optional[Sequence[str]] = None
    cache_dir: Optional[Path] = None
    strict_key: bool = False
    per_definition: Dict[str, "ApplyConfig"] = field(default_factory=dict)
    on_miss_policy: Optional[str] = None
    aot_ratio: float = 1.0

    def __post_init__(self) -> None:
        if self.on_miss_policy is not None:
            if self.on_miss_policy not in _UPSTREAM_POLICIES:
                raise ValueError(
                    f"on_miss_policy must be one of {tuple(_UPSTREAM_POLICIES)}, got {self.on_miss_policy!r}"
                )
            object.__setattr__(self, "on_miss", _UPSTREAM_POLICIES[self.on_miss_policy])
        if not 0.0 <= self.aot_ratio <= 1.0:
            raise ValueError(f"aot_ratio must be within [0, 1], got {self.aot_ratio!r}")
        if self.on_miss not in _POLICIES:
            raise ValueError(f"on_miss must be one of {_POLICIES}, got {self.on_miss!r}")
        if not self.max_log2_distance >= 0:
            raise ValueError(f"max_log2_distance must be >= 0, got {self.max_log2_distance!r}")

    def for_definition(self, name: str) -> "ApplyConfig":
        return self.per_definition.get(name, self)


@dataclass
class ApplyConfigRegistry(PerDefinitionRegistry[ApplyConfig]):
    """Per-definition apply configs (0.1.2's): `default` serves definitions not registered;
    without it only the registered definitions are applied. enable_apply takes one wherever it
    takes an ApplyConfig (see `as_apply_config`)."""

    def to_config(self) -> ApplyConfig:
        """The same choices as one ApplyConfig: the default with per-definition overrides, or, without
        a default, defaults limited to the registered definitions."""
        base = self.default if self.default is not None else ApplyConfig(definitions=tuple(self.per_definition))
        return replace(base, per_definition={**base.per_definition, **self.per_definition})


def get_default_registry() -> ApplyConfigRegistry:
    """A registry that applies every definition with the default ApplyConfig (0.1.2's preset; a
    new one each call, so registering into it changes nobody else's)."""
    return ApplyConfigRegistry(default=ApplyConfig())


def as_apply_config(config: Union[ApplyConfig, ApplyConfigRegistry, None]) -> Optional[ApplyConfig]:
    """What enable_apply accepts as a config (0.1.2 takes a registry too), as one ApplyConfig."""
    return config.to_config() if isinstance(config, ApplyConfigRegistry) else config
