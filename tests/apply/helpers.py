"""A toy dataset with Python solutions and traces measured "on this device" for the apply tests.

The traces are written as data (the cycle test produces real ones through the evaluator); the
solutions are built and run for real through flashinfer_bench.compile.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Iterable, Optional, Tuple

from flashinfer_bench.apply import hardware_name

DEF = {
    "name": "toy_rmsnorm_h64",
    "op_type": "rmsnorm",
    "axes": {"batch": {"type": "var"}, "hidden": {"type": "const", "value": 64}},
    "inputs": {
        "x": {"shape": ["batch", "hidden"], "dtype": "float16"},
        "weight": {"shape": ["hidden"], "dtype": "float16"},
        "eps": {"shape": None, "dtype": "float32"},
    },
    "outputs": {"out": {"shape": ["batch", "hidden"], "dtype": "float16"}},
    "reference": (
        "import torch\n\ndef run(x, weight, eps):\n    xf = x.float()\n"
        "    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()\n"
    ),
}

_BODY = (
    "    xf = x.float()\n"
    "    y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()\n"
)
SOURCES = {
    # value-returning
    "norm_a": "import torch\n\ndef run(x, weight, eps):\n" + _BODY + "    return y\n",
    "norm_b": "import torch\n\ndef run(x, weight, eps):\n" + _BODY + "    return (y,)\n",
    # destination-passing
    "norm_dps": "import torch\n\ndef run(x, weight, eps, out):\n" + _BODY + "    out.copy_(y)\n",
    # fails at run time for batch >= 4 only
    "norm_raises": (
        "import torch\n\ndef run(x, weight, eps):\n    if x.shape[0] >= 4:\n"
        "        raise RuntimeError('kernel bug for batch >= 4')\n" + _BODY + "    return y\n"
    ),
    # does not build
    "norm_broken": "import torch\n\ndef run(x, weight, eps):\n    return (\n",
}


def fallback_math(x, weight, eps):
    xf = x.float()
    return (xf * __import__("torch").rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()


def solution(name: str) -> dict:
    return {
        "name": name,
        "definition": DEF["name"],
        "author": "tests",
        "spec": {
            "language": "python",
            "target_hardware": ["cpu"],
            "entry_point": "main.py::run",
            "destination_passing_style": name == "norm_dps",
        },
        "sources": [{"path": "main.py", "content": SOURCES[name]}],
    }


def trace(sol: str, batch: int, latency_ms: float, hardware: Optional[str] = None,
          spread: Optional[Tuple[float, float]] = None, rel_err: float = 0.0, status: str = "PASSED") -> dict:
    hw = hardware or hardware_name("cpu")[1]
    ev: Dict = {"status": status, "environment": {"hardware": hw, "libs": {}}, "timestamp": "2026-01-01T00:00:00Z", "log": ""}
    if status in ("PASSED", "INCORRECT_NUMERICAL"):
        ev["correctness"] = {"max_relative_error": rel_err, "max_absolute_error": rel_err}
        if spread:
            ev["correctness"]["extra"] = {"latency_ms_p10": spread[0], "latency_ms_p90": spread[1]}
    if status == "PASSED":
        ev["performance"] = {"latency_ms": latency_ms, "reference_latency_ms": 1.0, "speedup_factor": 1.0 / latency_ms}
    return {
        "definition": DEF["name"],
        "workload": {"uuid": f"b{batch}", "axes": {"batch": batch}, "inputs": {}},
        "solution": sol,
        "evaluation": ev,
    }


def write_dataset(root: Path, solutions: Iterable[str], traces: Iterable[dict]) -> Path:
    (root / "definitions" / "rmsnorm").mkdir(parents=True)
    (root / "definitions" / "rmsnorm" / f"{DEF['name']}.json").write_text(json.dumps(DEF))
    for s in solutions:
        p = root / "solutions" / "tests" / "rmsnorm" / DEF["name"] / f"{s}.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(solution(s)))
    lines = [json.dumps(t) for t in traces]
    if lines:
        p = root / "traces" / "rmsnorm" / f"{DEF['name']}.jsonl"
        p.parent.mkdir(parents=True)
        p.write_text("\n".join(lines) + "\n")
    return root
