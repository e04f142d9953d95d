"""Fixtures of the bench tests: a small RMSNorm definition, solutions from source, a CPU worker."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Optional

import pytest

from flashinfer_bench.bench.client import shutdown_worker
from flashinfer_bench.bench.config import EvalConfig
from flashinfer_bench.bench.loader import _shim_build, build_solution
from flashinfer_bench.data import Definition, Solution, Workload

REDTEAM = Path(__file__).parent / "redteam"

RMS_REF = """import torch


def run(x, weight, eps):
    xf = x.to(torch.float32)
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (xf * rstd * weight.to(torch.float32)).to(torch.float16)
"""

GOOD_VR = """import torch


def run(x, weight, eps):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
"""

GOOD_DPS = """import torch


def run(x, weight, eps, out):
    xf = x.float()
    out.copy_((xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half())
"""


def rms_definition(hidden: int = 256, name: Optional[str] = None) -> Definition:
    return Definition.model_validate(
        {
            "name": name or f"rmsnorm_h{hidden}",
            "op_type": "rmsnorm",
            "axes": {"batch_size": {"type": "var"}, "hidden_size": {"type": "const", "value": hidden}},
            "inputs": {
                "x": {"shape": ["batch_size", "hidden_size"], "dtype": "float16"},
                "weight": {"shape": ["hidden_size"], "dtype": "float16"},
                "eps": {"shape": None, "dtype": "float32"},
            },
            "outputs": {"out": {"shape": ["batch_size", "hidden_size"], "dtype": "float16"}},
            "reference": RMS_REF,
        }
    )


def rms_workload(batch: int = 16, uuid: Optional[str] = None) -> Workload:
    return Workload(
        axes={"batch_size": batch},
        inputs={"x": {"type": "random"}, "weight": {"type": "random"}, "eps": {"type": "scalar", "value": 1e-6}},
        uuid=uuid or f"rms_b{batch}",
    )


def make_solution(name: str, source: str, definition: Definition, dps: bool = False, language: str = "python") -> Solution:
    return Solution.model_validate(
        {
            "name": name, "definition": definition.name, "author": "tests",
            "spec": {"language": language, "entry_point": "main.py::run", "destination_passing_style": dps},
            "sources": [{"path": "main.py", "content": source}],
        }
    )


@pytest.fixture(scope="session")
def bench_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bench")


@pytest.fixture(scope="session")
def cpu_config(bench_tmp: Path) -> EvalConfig:
    """Short budgets so that the suite stays fast; one worker for the whole session."""
    return EvalConfig(
        device="cpu", worker_dir=str(bench_tmp / "w"), cache_dir=str(bench_tmp / "cache"),
        max_time_s=0.03, warmup_max_s=0.01, warmup_min_s=0.0, iterations=10, timeout_s=60,
        idle_timeout_s=300,
    )


@pytest.fixture(scope="session", autouse=True)
def _stop_cpu_worker(cpu_config: EvalConfig):
    yield
    shutdown_worker("cpu", cpu_config)


@pytest.fixture(scope="session")
def rms_def() -> Definition:
    return rms_definition()


@pytest.fixture(scope="session")
def build(bench_tmp: Path) -> Callable[[Solution, Definition], Dict]:
    """In-process build of Python solutions (the bench shim): the compile package's builder starts
    a child that imports torch for every solution, too slow for a corpus of twenty; the evaluator
    path is the same. test_worker.py covers builds through flashinfer_bench.compile."""

    def _build(sol: Solution, definition: Definition) -> Dict:
        return _shim_build(sol, bench_tmp / "cache")

    return _build


@pytest.fixture(scope="session")
def compile_build(bench_tmp: Path) -> Callable[[Solution, Definition], Dict]:
    """A build through flashinfer_bench.compile (what the pipeline and Benchmark use)."""

    def _build(sol: Solution, definition: Definition) -> Dict:
        return build_solution(sol, definition, bench_tmp / "cache")

    return _build
