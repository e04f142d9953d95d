"""A two-definition toy dataset and decorated functions for the tracing tests (CPU, tiny)."""
from __future__ import annotations

import json
from pathlib import Path

import torch

from flashinfer_bench import apply

NORM = {
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

GATHER = {
    "name": "toy_gather_d8",
    "op_type": "gather",
    "axes": {"n": {"type": "var"}, "rows": {"type": "var"}, "d": {"type": "const", "value": 8}},
    "inputs": {
        "table": {"shape": ["rows", "d"], "dtype": "float32"},
        "idx": {"shape": ["n"], "dtype": "int32"},
    },
    "outputs": {"out": {"shape": ["n", "d"], "dtype": "float32"}},
    "reference": "import torch\n\ndef run(table, idx):\n    return table[idx.long()]\n",
}


def write_dataset(root: Path) -> Path:
    for d in (NORM, GATHER):
        p = root / "definitions" / d["op_type"] / f"{d['name']}.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(d, indent=2))
    return root


@apply("toy_rmsnorm_h64")
def rmsnorm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()


@apply("toy_gather_d8")
def gather(table, idx):
    return table[idx.long()]


def workload_lines(root: Path, op_type: str, name: str) -> list:
    p = root / "workloads" / op_type / f"{name}.jsonl"
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
