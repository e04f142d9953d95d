"""The sandbox on a GPU: CUDA works confined, the GPU memory fraction holds, background kernels
are flagged, and the dataset and project stay unchanged (run with `pytest -m gpu tests/security`)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from flashinfer_bench.bench.client import shutdown_worker

from .conftest import Lab, flags

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    lab = Lab(tmp_path_factory.mktemp("security_gpu"))
    lab.config = lab.config.model_copy(update={"device": "cuda:0", "max_time_s": 0.1})
    lab.start()
    yield lab
    shutdown_worker("cuda:0", lab.config)
    lab.cleanup()


def test_cuda_works_confined(gpu_lab: Lab) -> None:
    t = gpu_lab.run_good()
    ev = t.evaluation
    assert ev.status.value == "PASSED", ev.log
    sandbox = ev.environment.model_dump().get("sandbox", "")
    assert "landlock" in sandbox and "seccomp" in sandbox and "netns" in sandbox, sandbox
    assert ev.performance.latency_ms > 0


def test_quiet_writes_are_denied_on_the_gpu_machine(gpu_lab: Lab, unchanged) -> None:
    t = gpu_lab.run("write_quietly")
    assert t.evaluation.status.value == "PASSED", t.evaluation.log
    assert "BREACH" not in t.evaluation.log


def test_gpu_memory_fraction(gpu_lab: Lab) -> None:
    t = gpu_lab.run("gpu_grab_memory")
    ev = t.evaluation
    assert ev.status.value == "RUNTIME_ERROR", ev.log[:3000]
    assert "out of memory" in ev.log.lower(), ev.log[:3000]
    assert gpu_lab.run_good().evaluation.status.value == "PASSED"


def test_background_kernels_are_flagged(gpu_lab: Lab) -> None:
    t = gpu_lab.run("gpu_background_kernels")
    ev = t.evaluation
    if ev.status.value == "PASSED":
        assert "background_work" in flags(t), ev.correctness.extra
    else:
        assert ev.status.value in ("INCORRECT_NUMERICAL", "RUNTIME_ERROR"), ev.log[:3000]
    assert gpu_lab.run_good().evaluation.status.value == "PASSED"


def test_forged_frames_on_the_gpu(gpu_lab: Lab) -> None:
    t = gpu_lab.run("forge_result")
    assert t.evaluation.status.value != "PASSED", t.evaluation.log[:3000]
    assert gpu_lab.run_good().evaluation.status.value == "PASSED"


def test_scratch_only(gpu_lab: Lab, tmp_path: Path, unchanged) -> None:
    t = gpu_lab.run("write_passed_trace")
    assert t.evaluation.status.value == "RUNTIME_ERROR", t.evaluation.log[:3000]
