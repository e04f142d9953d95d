"""Evaluation settings: `EvalConfig` (what one evaluation does) and the seeds' `BenchmarkConfig`.

Torch-free, so the pipeline's thin benchmark clients can build a config without importing torch.
Every field is enforced somewhere; upstream names that we always honour in one fixed way
(`use_isolated_runner`) are accepted and documented, not silently ignored.
"""
from __future__ import annotations

import os

from typing import Any, Dict, List, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator


class EvalConfig(BaseModel):
    """Settings of one (solution, workload) evaluation; part of the benchmark job's params."""

    model_config = ConfigDict(extra="forbid")

    # --- counts (minimums: sampling is adaptive above them)
    warmup_runs: int = Field(3, ge=0, description="minimum warm-up calls before timing")
    iterations: int = Field(20, ge=1, description="minimum timed samples")
    num_trials: int = Field(3, ge=1, description="correctness trials, each on its own seed")
    # --- tolerances: None = per output dtype default (see correctness.DEFAULT_TOLERANCES),
    # then the definition's `tolerance`, then these when set.
    rtol: Optional[float] = Field(None, ge=0)
    atol: Optional[float] = Field(None, ge=0)
    # --- time
    timeout_s: float = Field(300.0, gt=0, description="per evaluation, in the runner")
    max_time_s: float = Field(
        0.25, gt=0, description="sampling budget of the solution (the reference, when not cached, gets half)"
    )
    warmup_min_s: float = Field(0.01, ge=0)
    warmup_max_s: float = Field(0.02, ge=0)
    max_samples: int = Field(3000, ge=1)
    target_rel_ci: float = Field(
        0.01, gt=0, description="stop sampling when the median's 95% CI half-width / median is below"
    )
    # --- inputs
    seed: Optional[int] = Field(None, description="base seed; None = drawn once per worker, recorded")
    input_sets: int = Field(8, ge=1, description="distinct input buffers rotated while timing")
    check_timed_outputs: bool = True
    # --- per family (defaults per op type in data/op_types.py; these override them)
    inputs: Dict[str, Dict[str, Any]] = Field(
        default_factory=dict, description="generator specs per input name or glob (data/input_specs.py)"
    )
    check: Optional[Dict[str, Any]] = Field(None, description="correctness check: {kind: elementwise|matched_ratio|sampling, ...}")
    tolerance: Optional[Dict[str, float]] = Field(None, description="{atol, rtol} for every output, under the definition's own")
    profile_baseline: bool = Field(True, description="time the reference (speedup needs it)")
    fresh_runner_per_solution: bool = Field(
        True, description="each solution starts in a runner no other solution ran in (no patch, fd, thread or "
        "cache of another solution); the reference is timed in a runner where no solution ever ran",
    )
    # --- where it runs
    device: str = "auto"
    worker_dir: Optional[str] = None
    cache_dir: Optional[str] = None
    idle_timeout_s: float = Field(120.0, gt=0)
    startup_timeout_s: float = Field(300.0, gt=0)
    log_limit_bytes: int = Field(64 * 1024, ge=1024)
    allow_unconfined: bool = Field(
        default_factory=lambda: os.environ.get("FIB_ALLOW_UNCONFINED", "").strip().lower() in ("1", "true", "yes"),
        description="run solutions even where the runner could not confine them (sandbox); off by default "
        "(env FIB_ALLOW_UNCONFINED=1 opts out too)",
    )

    @field_validator("inputs")
    @classmethod
    def _inputs(cls, v: Dict[str, Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
        from ..data.input_specs import spec_problems

        problems = [p for name, spec in v.items() for p in spec_problems(f"inputs.{name}", spec)]
        if problems:
            raise ValueError("; ".join(problems))
        return v

    @field_validator("tolerance")
    @classmethod
    def _tolerance(cls, v: Optional[Dict[str, float]]) -> Optional[Dict[str, float]]:
        for k, x in (v or {}).items():
            if k not in ("atol", "rtol"):
                raise ValueError(f"tolerance.{k}: unknown key (atol, rtol)")
            if not isinstance(x, (int, float)) or not (0 <= x < float("inf")):
                raise ValueError(f"tolerance.{k}: must be a finite number >= 0, not {x!r}")
        return v

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        v = v.strip().lower()
        if v in ("auto", "cpu", "cuda") or (v.startswith("cuda:") and v[5:].isdigit()):
            return "cuda:0" if v == "cuda" else v
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', not {v!r}")

    def timing_key(self) -> str:
        """The settings that change a timing result (part of the reference-timing cache key)."""
        return f"{self.warmup_runs}/{self.iterations}/{self.max_time_s}/{self.max_samples}/{self.target_rel_ci}"


def merge_evaluation(base: Dict[str, Any], *layers: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """Evaluation settings with override layers on top (later wins); generator specs under
    `inputs` merge per input name. One rule for the pipeline's config and the Python API."""
    ev = dict(base)
    for layer in layers:
        for k, v in (layer or {}).items():
            if k == "inputs" and isinstance(v, dict):
                ev["inputs"] = {**(ev.get("inputs") or {}), **v}
            else:
                ev[k] = v
    return ev


# The evaluation settings both doors start from (issue 16): the pipeline's config.yaml
# `evaluation` and `cpu.evaluation` hold the same values (tests/bench/test_skips.py keeps them
# equal), and `BenchmarkConfig` fills what its user left unset from them.
DEFAULT_EVALUATION: Dict[str, Any] = {"warmup_runs": 10, "iterations": 50, "num_trials": 3, "timeout_s": 300, "max_time_s": 0.35}
CPU_EVALUATION: Dict[str, Any] = {"warmup_runs": 1, "iterations": 5, "num_trials": 2, "timeout_s": 120, "max_time_s": 0.5}


class BenchmarkConfig(BaseModel):
    """The seeds' / upstream's `BenchmarkConfig`. None means "our default" (see EvalConfig)."""

    model_config = ConfigDict(extra="forbid")

    warmup_runs: Optional[int] = Field(None, ge=0)
    iterations: Optional[int] = Field(None, ge=1)
    num_trials: Optional[int] = Field(None, ge=1)
    rtol: Optional[float] = Field(None, ge=0)
    atol: Optional[float] = Field(None, ge=0)
    timeout_seconds: Optional[float] = Field(None, gt=0)
    definitions: Optional[List[str]] = None
    solutions: Optional[List[str]] = None
    device: str = "auto"
    profile_baseline: bool = True
    # Upstream chooses between a persistent and a per-evaluation process; we always evaluate in an
    # isolated runner process under a supervisor, so both values behave the same.
    use_isolated_runner: bool = False
    seed: Optional[int] = None
    max_time_s: Optional[float] = Field(None, gt=0)
    cache_dir: Optional[str] = None
    worker_dir: Optional[str] = None
    # per op type / per definition overrides of the evaluation (the pipeline config's keys of the
    # same names): e.g. {"sampling": {"check": {"kind": "sampling", "samples": 20000}}}
    op_type_evaluation: Dict[str, Dict[str, Any]] = Field(default_factory=dict)
    definition_evaluation: Dict[str, Dict[str, Any]] = Field(default_factory=dict)
    # CPU size limits (the pipeline config's `cpu:` keys); None = the pipeline's defaults
    cpu_limits: Optional[Dict[str, float]] = None

    def eval_config_for(self, definition: str, op_type: str, device: Optional[str] = None) -> EvalConfig:
        """The EvalConfig of one definition: `to_eval_config()` under its op type's and its own overrides."""
        base = self.to_eval_config(device)
        layers = (self.op_type_evaluation.get(op_type), self.definition_evaluation.get(definition))
        if not any(layers):
            return base
        return EvalConfig(**merge_evaluation(base.model_dump(exclude_unset=True), *layers))

    def to_eval_config(self, device: Optional[str] = None) -> EvalConfig:
        """The evaluator's settings: the pipeline's defaults for `device` (the resolved device; the
        CPU gets the pipeline's CPU settings), under what this config sets."""
        fields: Dict[str, Any] = dict(CPU_EVALUATION if (device or self.device) == "cpu" else DEFAULT_EVALUATION)
        fields.update(device=self.device, profile_baseline=self.profile_baseline)
        for ours, theirs in (
            ("warmup_runs", "warmup_runs"),
            ("iterations", "iterations"),
            ("num_trials", "num_trials"),
            ("rtol", "rtol"),
            ("atol", "atol"),
            ("timeout_s", "timeout_seconds"),
            ("seed", "seed"),
            ("max_time_s", "max_time_s"),
            ("cache_dir", "cache_dir"),
            ("worker_dir", "worker_dir"),
        ):
            v = getattr(self, theirs)
            if v is not None:
                fields[ours] = v
        return EvalConfig(**fields)
