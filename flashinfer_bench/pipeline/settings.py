"""Evaluation settings per definition and device, and a cheap toolchain fingerprint."""
from __future__ import annotations

import shutil
from functools import lru_cache
from importlib import metadata
from typing import Any, Dict, Optional

_TOOL_PACKAGES = ("torch", "triton", "apache-tvm-ffi", "tilelang")


def evaluation_for(config: Dict[str, Any], definition: str, device: str, op_type: Optional[str] = None) -> Dict[str, Any]:
    """`evaluation`, then `cpu.evaluation` on the CPU, then `op_type_evaluation[op_type]`, then
    `definition_evaluation[definition]` (generator specs under `inputs` merge per input name).

    Only the settings that apply to a job are in its params, so changing one definition's
    override re-runs only that definition's benchmarks.
    """
    ev = dict(config.get("evaluation") or {})
    if device == "cpu":
        ev.update((config.get("cpu") or {}).get("evaluation") or {})
    from flashinfer_bench.bench.config import merge_evaluation

    per_op = (config.get("op_type_evaluation") or {}).get(op_type) if op_type is not None else None
    ev = merge_evaluation(ev, per_op, (config.get("definition_evaluation") or {}).get(definition))
    return ev


@lru_cache(maxsize=1)
def toolchain_fingerprint() -> str:
    """Versions of the compilers that shape an artifact; read from package metadata (no imports)."""
    parts = []
    for pkg in _TOOL_PACKAGES:
        try:
            parts.append(f"{pkg}={metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{pkg}=none")
    nvcc = shutil.which("nvcc")
    parts.append(f"nvcc={'yes' if nvcc else 'none'}")
    return ";".join(parts)


def _coerce(v: Any) -> Any:
    if not isinstance(v, str):
        return v
    low = v.strip().lower()
    if low in ("null", "none", "~"):
        return None
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v


def _coerce_deep(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _coerce_deep(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_coerce_deep(x) for x in v]
    return _coerce(v)


def coerce_config(config: Dict[str, Any]) -> None:
    """`snakemake --config evaluation={iterations: 5}` yields strings (YAML's BaseLoader), at any
    depth (`definition_evaluation={d: {check: {samples: 128}}}`); make numbers numbers again."""
    for key in ("evaluation", "cpu", "definition_evaluation", "op_type_evaluation", "save_results", "prestart_worker"):
        if key in config:
            config[key] = _coerce_deep(config[key])
    for key in ("definitions", "solutions"):
        if isinstance(config.get(key), str):
            config[key] = [x for x in config[key].replace(",", " ").split() if x]
