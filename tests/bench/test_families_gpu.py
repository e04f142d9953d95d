"""The real op families of the example dataset on a GPU (pytest -m gpu on the device machine):
every PyTorch and Triton solution PASSES its family's check on a mid-size workload, with the
structured inputs generated from the axes, and each trace records which check ran."""
from __future__ import annotations

from pathlib import Path

import pytest

from flashinfer_bench.bench.client import evaluate_via_worker, shutdown_worker
from flashinfer_bench.bench.config import EvalConfig
from flashinfer_bench.bench.loader import build_solution
from flashinfer_bench.data import TraceSet

pytestmark = pytest.mark.gpu

FAMILIES = {"gqa_paged", "gqa_ragged", "mla_paged", "sampling", "moe"}
EXPECTED_CHECK = {"sampling": "sampling", "moe": "matched_ratio"}


@pytest.fixture(scope="module")
def cuda_config(tmp_path_factory: pytest.TempPathFactory):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    d = tmp_path_factory.mktemp("families")
    cfg = EvalConfig(device="cuda:0", worker_dir=str(d / "w"), cache_dir=str(d / "cache"), timeout_s=300)
    yield cfg
    shutdown_worker("cuda:0", cfg)


def _cases(example: Path):
    ts = TraceSet.from_path(example)
    for name, d in sorted(ts.definitions.items()):
        if d.op_type not in FAMILIES:
            continue
        wls = sorted(ts.workloads_for(name), key=lambda t: sum(t.workload.axes.values()))
        mid = wls[len(wls) // 2].workload
        for sol in ts.solutions_for(name):
            yield pytest.param(ts, d, sol, mid, id=sol.name)


def pytest_generate_tests(metafunc):
    if "case" in metafunc.fixturenames:
        example = Path(__file__).resolve().parents[2] / "dataset"
        metafunc.parametrize("case", [p.values for p in _cases(example)], ids=[p.id for p in _cases(example)])


def test_family_solution_passes_on_the_gpu(case, cuda_config, tmp_path) -> None:
    ts, d, sol, wl = case
    build = build_solution(sol, d, Path(cuda_config.cache_dir))
    assert build.get("status") == "OK", build.get("log", "")[-2000:]
    t = evaluate_via_worker(d, sol, wl, build, cuda_config, dataset_root=ts.root)
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log[-3000:]
    check = ev.correctness.extra["check"]
    assert check["kind"] == EXPECTED_CHECK.get(d.op_type, "elementwise")
    if d.op_type == "sampling":
        assert check["samples_per_row"] >= 1000 and check["out_of_support"] == 0
    assert ev.performance.latency_ms > 0 and ev.correctness.extra["checked_timed_calls"] >= 3
