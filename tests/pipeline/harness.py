"""Run the real Snakemake pipeline on a small dataset and read which jobs ran."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

REPO = Path(__file__).resolve().parents[2]
# One CPU worker for all pipeline tests (its caches are keyed by the full definition and workload,
# so tests that edit a reference never see another test's results); it exits when idle.
SHARED_WORKERS = Path(os.environ.get("TMPDIR", "/tmp")) / f"fib-test-workers-{os.getuid()}"

REFERENCE = (
    "import torch\n\n"
    "def run(x, weight, eps):\n"
    "    xf = x.float()\n"
    "    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)\n"
)

TORCH_VALUE = (
    "import torch\n\n"
    "def run(x, weight, eps):\n"
    "    xf = x.float()\n"
    "    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)\n"
)

TORCH_DPS = (
    "import torch\n\n"
    "def run(x, weight, eps, out):\n"
    "    out.copy_(torch.nn.functional.rms_norm(x.float(), (x.shape[-1],), weight.float(), float(eps)).to(out.dtype))\n"
)


def definition(name: str = "rms_h256", hidden: int = 256, reference: str = REFERENCE) -> dict:
    return {
        "name": name,
        "op_type": "rmsnorm",
        "description": "small RMSNorm for pipeline tests",
        "axes": {"batch_size": {"type": "var"}, "hidden_size": {"type": "const", "value": hidden}},
        "inputs": {
            "x": {"shape": ["batch_size", "hidden_size"], "dtype": "float16"},
            "weight": {"shape": ["hidden_size"], "dtype": "float16"},
            "eps": {"shape": None, "dtype": "float32"},
        },
        "outputs": {"out": {"shape": ["batch_size", "hidden_size"], "dtype": "float16"}},
        "reference": reference,
    }


def solution(name: str, source: str, dps: bool, definition: str = "rms_h256", description: str = "") -> dict:
    return {
        "name": name,
        "definition": definition,
        "author": "tests",
        "description": description or name,
        "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run",
                 "dependencies": [], "destination_passing_style": dps},
        "sources": [{"path": "main.py", "content": source}],
    }


def workload_line(definition: str, batch: int) -> str:
    return json.dumps({
        "definition": definition,
        "workload": {"uuid": f"{definition}_b{batch}", "axes": {"batch_size": batch},
                     "inputs": {"x": {"type": "random"}, "weight": {"type": "random"},
                                "eps": {"type": "scalar", "value": 1e-6}}},
        "solution": None, "evaluation": None,
    }) + "\n"


def write_dataset(root: Path, batches=(1, 4, 16)) -> Path:
    ds = root / "dataset"
    (ds / "definitions/rmsnorm").mkdir(parents=True)
    (ds / "definitions/rmsnorm/rms_h256.json").write_text(json.dumps(definition(), indent=2))
    sdir = ds / "solutions/tests/rmsnorm/rms_h256"
    sdir.mkdir(parents=True)
    (sdir / "torch_value.json").write_text(json.dumps(solution("torch_value", TORCH_VALUE, False), indent=2))
    (sdir / "torch_dps.json").write_text(json.dumps(solution("torch_dps", TORCH_DPS, True), indent=2))
    (ds / "workloads/rmsnorm").mkdir(parents=True)
    (ds / "workloads/rmsnorm/rms_h256.jsonl").write_text("".join(workload_line("rms_h256", b) for b in batches))
    return ds


@dataclass
class Run:
    rc: int
    output: str
    jobs: Dict[str, List[Dict[str, str]]] = field(default_factory=dict)

    def ran(self, rule: str) -> List[Dict[str, str]]:
        return self.jobs.get(rule, [])

    def count(self, rule: str) -> int:
        return len(self.ran(rule))


_RULE = re.compile(r"^(?:local)?rule (\w+):")
_WC = re.compile(r"^\s+wildcards: (.*)$")


def parse_jobs(output: str) -> Dict[str, List[Dict[str, str]]]:
    jobs: Dict[str, List[Dict[str, str]]] = {}
    current: Optional[str] = None
    for line in output.splitlines():
        m = _RULE.match(line)
        if m:
            current = m.group(1)
            jobs.setdefault(current, []).append({})
            continue
        m = _WC.match(line)
        if m and current:
            jobs[current][-1] = dict(kv.split("=", 1) for kv in m.group(1).split(", "))
    return jobs


def run_pipeline(workdir: Path, config: Optional[dict] = None, extra: Optional[List[str]] = None,
                 timeout: float = 600, env: Optional[dict] = None) -> Run:
    cfg = {"dataset": str(workdir / "dataset"), "results": "results", "device": "cpu",
           "cache_dir": str(workdir / "cache"),
           "cpu": {"evaluation": {"warmup_runs": 1, "iterations": 3, "num_trials": 1, "max_time_s": 0.05, "timeout_s": 60}}}
    for k, v in (config or {}).items():
        if isinstance(v, dict) and isinstance(cfg.get(k), dict):
            cfg[k] = {**cfg[k], **v}
        else:
            cfg[k] = v
    cfg_file = workdir / "run-config.json"
    cfg_file.write_text(json.dumps(cfg))
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--cores", "2", "--configfile", str(cfg_file), *(extra or [])]
    full_env = {**os.environ, "FIB_CACHE_PATH": str(workdir / "cache"), "FIB_WORKER_DIR": str(SHARED_WORKERS),
                **(env or {})}
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=workdir)
    out = p.stdout + p.stderr
    return Run(p.returncode, out, parse_jobs(out))
