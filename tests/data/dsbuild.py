"""A small, valid dataset written file by file, for tests to break one piece at a time."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
from safetensors.numpy import save_file

DEF = {
    "name": "rmsnorm_d4096",
    "op_type": "rmsnorm",
    "description": "RMSNorm",
    "tags": ["status:test"],
    "axes": {
        "batch_size": {"type": "var"},
        "hidden_size": {"type": "const", "value": 4096},
    },
    "inputs": {
        "x": {"shape": ["batch_size", "hidden_size"], "dtype": "float16"},
        "weight": {"shape": ["hidden_size"], "dtype": "float16"},
        "eps": {"shape": None, "dtype": "float32"},
    },
    "outputs": {"out": {"shape": ["batch_size", "hidden_size"], "dtype": "float16"}},
    "reference": "import torch\n\ndef run(x, weight, eps):\n    return x\n",
    "constraints": ["hidden_size % 128 == 0", "batch_size <= 4096"],
}

SOL = {
    "name": "rmsnorm_torch",
    "definition": "rmsnorm_d4096",
    "author": "tests",
    "spec": {
        "language": "python",
        "target_hardware": ["cuda"],
        "entry_point": "main.py::run",
        "destination_passing_style": False,
    },
    "sources": [{"path": "main.py", "content": "def run(x, weight, eps):\n    return x\n"}],
}

BLOB = "blob/workloads/rmsnorm/rmsnorm_d4096/rmsnorm_d4096_st.safetensors"


def workload_line(uuid: str, batch: int, **inputs: Any) -> Dict[str, Any]:
    ins: Dict[str, Any] = {"x": {"type": "random"}, "weight": {"type": "random"},
                           "eps": {"type": "scalar", "value": 1e-6}}
    ins.update(inputs)
    return {"definition": "rmsnorm_d4096",
            "workload": {"axes": {"batch_size": batch}, "inputs": ins, "uuid": uuid},
            "solution": None, "evaluation": None}


def write_json(path: Path, obj: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2) + "\n")
    return path


def write_jsonl(path: Path, lines: List[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def make_dataset(root: Path) -> Path:
    """definitions/rmsnorm/rmsnorm_d4096.json, one solution, three workloads (the third reads x
    and weight from a safetensors file), no traces."""
    write_json(root / "definitions/rmsnorm/rmsnorm_d4096.json", DEF)
    write_json(root / "solutions/tests/rmsnorm/rmsnorm_d4096/rmsnorm_torch.json", SOL)
    blob = root / BLOB
    blob.parent.mkdir(parents=True, exist_ok=True)
    save_file({"x": np.zeros((2, 4096), np.float16), "weight": np.ones((4096,), np.float16)}, str(blob))
    write_jsonl(root / "workloads/rmsnorm/rmsnorm_d4096.jsonl", [
        workload_line("w1", 1),
        workload_line("w8", 8),
        workload_line("wst", 2, x={"type": "safetensors", "path": BLOB, "tensor_key": "x"},
                      weight={"type": "safetensors", "path": BLOB, "tensor_key": "weight"}),
    ])
    return root


WORKLOADS = "workloads/rmsnorm/rmsnorm_d4096.jsonl"
DEFINITION = "definitions/rmsnorm/rmsnorm_d4096.json"
SOLUTION = "solutions/tests/rmsnorm/rmsnorm_d4096/rmsnorm_torch.json"
