"""Shared fixtures for the whole test suite (other areas may add theirs here)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository checkout."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def anchor_dataset() -> Path:
    """A real FlashInfer-Bench 0.1.2 dataset: ../shared/anchor-dataset beside the repository
    (or shared/anchor-dataset inside it, as carried to the GPU machine)."""
    p = (REPO_ROOT / ".." / "shared" / "anchor-dataset").resolve()
    if not p.is_dir():
        p = REPO_ROOT / "shared" / "anchor-dataset"
    if not p.is_dir():
        pytest.skip(f"anchor dataset not found at {p} (shared/ must sit beside the repository)")
    return p


@pytest.fixture(scope="session")
def example_dataset() -> Path:
    """The example dataset shipped in the repository (dataset/)."""
    p = REPO_ROOT / "dataset"
    if not (p / "definitions").is_dir():
        pytest.skip(f"example dataset {p} is not there yet")
    return p


@pytest.fixture(scope="session")
def seeds_dir() -> Path:
    """The user's seed documents, whose code is our public API: ../shared/seeds."""
    p = (REPO_ROOT / ".." / "shared" / "seeds").resolve()
    if not p.is_dir():
        pytest.skip(f"seed documents not found at {p}")
    return p


# Files that take longest (measured on the 2-core CI machine), most first. Under pytest-xdist
# (`-n 2 --dist loadfile`, see pyproject.toml) each file runs whole on one worker, in file order;
# handing out the long files first keeps one of them from being the tail of the run.
LONGEST_FIRST = [
    "tests/test_slurm_cluster.py",
    "tests/pipeline/test_results_safe.py",
    "tests/pipeline/test_incremental.py",
    "tests/compile/test_native_builders.py",
    "tests/apply/test_cycle.py",
    "tests/compile/test_dataset.py",
    "tests/bench/test_redteam.py",
    "tests/security/test_attacks.py",
    "tests/security/test_in_runner.py",
    "tests/security/test_build_attacks.py",
    "tests/security/test_gaps.py",
    "tests/bench/test_benchmark.py",
    "tests/compile/test_triton_builder.py",
    "tests/apply/test_apply.py",
]


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    """Under xdist only: the long files first; the order inside each file is kept."""
    if not hasattr(config, "workerinput"):
        return
    rank = {f: i for i, f in enumerate(LONGEST_FIRST)}

    def key(item) -> int:
        return rank.get(item.nodeid.split("::", 1)[0], len(rank))

    items.sort(key=key)  # stable: the rest keeps pytest's order


@pytest.fixture(scope="module")
def running_zygote(tmp_path_factory: pytest.TempPathFactory):
    """A build zygote for the module's builds (FIB_BUILD_ZYGOTE=1), gone after it."""
    mp = pytest.MonkeyPatch()
    mp.setenv("FIB_BUILD_ZYGOTE", "1")
    mp.setenv("FIB_ZYGOTE_DIR", str(tmp_path_factory.mktemp("zyg")))
    from flashinfer_bench.compile import zygote

    zygote.ensure_started()  # builds only (the workflow's job server: tests/pipeline/test_job_server.py)
    deadline = time.monotonic() + 120
    while (s := zygote.connect(zygote.socket_path(), 0.5)) is None:
        assert time.monotonic() < deadline, "the zygote did not come up"
        time.sleep(0.2)
    s.close()
    yield zygote.socket_path()
    path = zygote.socket_path()
    path.unlink(missing_ok=True)  # the zygote exits when its socket is gone
    mp.undo()
