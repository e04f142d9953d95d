"""Fixtures of the security tests: a throw-away dataset, a confined CPU worker with small limits,
hostile solutions from tests/security/attacks with the paths they attack filled in, digests."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Dict, Iterator, Optional

import pytest

from flashinfer_bench.bench.client import evaluate_via_worker, shutdown_worker, warm_worker, worker_paths
from flashinfer_bench.bench.config import EvalConfig
from flashinfer_bench.bench.loader import _shim_build
from flashinfer_bench.data import Definition, Solution, Trace, Workload

from tests.bench.conftest import GOOD_VR, make_solution, rms_definition, rms_workload

ATTACKS = Path(__file__).parent / "attacks"
REPO = Path(__file__).resolve().parents[2]
# small limits so that hitting them is quick (the worker passes its environment to its runners)
LIMITS = {"FIB_SANDBOX_HOST_MEM_GB": "2", "FIB_SANDBOX_FSIZE_MB": "16", "FIB_SANDBOX_NPROC": "64",
          "FIB_SANDBOX_SCRATCH_MB": "256", "FIB_SANDBOX_SCRATCH_FILES": "20000"}
# an exported secret of the user who runs the worker: no runner may see it
SECRET = {"FIB_TEST_API_SECRET": "hunter2-7f3a9c"}
_SKIP_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", ".snakemake", ".ruff_cache", ".mypy_cache", "results"}


def tree_digest(root: Path) -> Dict[str, str]:
    """relative path -> sha256 of every file under `root` (caches and VCS data left out; files over
    1 MiB by size and mtime)."""
    out: Dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
        for f in filenames:
            p = Path(dirpath) / f
            try:
                st = p.stat()
                # large files (wheels, blobs) by size and modification time, the rest by content
                out[str(p.relative_to(root))] = (
                    f"{st.st_size}:{st.st_mtime_ns}" if st.st_size > (1 << 20) else hashlib.sha256(p.read_bytes()).hexdigest()
                )
            except OSError:
                continue
    return out


@contextmanager
def env_vars(values: Dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def write_dataset(root: Path, definition: Definition, good: Solution) -> None:
    """A small dataset in FlashInfer Trace layout, with one trace already there."""
    (root / "definitions" / "rmsnorm").mkdir(parents=True)
    (root / "definitions" / "rmsnorm" / f"{definition.name}.json").write_text(definition.model_dump_json(indent=2))
    sdir = root / "solutions" / "tests" / "rmsnorm" / definition.name
    sdir.mkdir(parents=True)
    (sdir / f"{good.name}.json").write_text(good.model_dump_json(indent=2))
    (root / "workloads" / "rmsnorm").mkdir(parents=True)
    wl = rms_workload(16)
    line = {"definition": definition.name, "workload": wl.model_dump(mode="json"), "solution": None, "evaluation": None}
    (root / "workloads" / "rmsnorm" / f"{definition.name}.jsonl").write_text(json.dumps(line) + "\n")
    (root / "traces" / "rmsnorm").mkdir(parents=True)
    (root / "traces" / "rmsnorm" / f"{definition.name}.jsonl").write_text(json.dumps({**line, "solution": good.name}) + "\n")


class Lab:
    """The setting of every attack: dataset, cache, worker, and the paths the attacks aim at."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.definition = rms_definition()
        self.dataset = tmp / "dataset"
        self.cache = tmp / "cache"
        self.good = make_solution("good_rms", GOOD_VR, self.definition)
        write_dataset(self.dataset, self.definition, self.good)
        self.good_build = _shim_build(self.good, self.cache)
        self.config = EvalConfig(
            device="cpu", worker_dir=str(tmp / "w"), cache_dir=str(self.cache), max_time_s=0.03, warmup_max_s=0.01,
            warmup_min_s=0.0, iterations=10, timeout_s=60, idle_timeout_s=300,
            # FIB_TEST_SHARED_RUNNER=1 turns the defence off: the cross-talk attacks then work
            fresh_runner_per_solution=os.environ.get("FIB_TEST_SHARED_RUNNER") != "1",
        )
        self.worker_dir = tmp / "w"
        self.marker = f"fib-breach-{uuid.uuid4().hex[:12]}"
        self.secret = tmp / "w" / "supervisor-secret.txt"

    def start(self, env: Optional[Dict[str, str]] = None) -> Dict:
        with env_vars({**LIMITS, **SECRET, "FIB_DATASET_PATH": str(self.dataset), **(env or {})}):
            ready = warm_worker("cpu", self.config)
        assert ready is not None, "the confined CPU worker did not start"
        self.secret.write_text(f"SECRET-{self.marker}\n")
        return ready

    def targets(self, **extra: object) -> Dict[str, object]:
        paths = worker_paths("cpu", self.worker_dir)
        t: Dict[str, object] = {
            "dataset": str(self.dataset), "cache": str(self.cache), "project": str(REPO), "marker": self.marker,
            "home": str(Path.home()), "other_solution_json": str(next((self.dataset / "solutions").rglob("*.json"))),
            "other_artifact": self.good_build["artifact_dir"], "worker_dir": str(self.worker_dir),
            "worker_socket": str(paths["socket"]), "secret": str(self.secret),
            "logs_dir": str(next(self.worker_dir.glob("*.d")) / "logs"),
            "trace_file": str(self.dataset / "traces" / "rmsnorm" / f"{self.definition.name}.jsonl"),
            "other_artifact_file": str(Path(self.good_build["artifact_dir"]) / "main.py"),
        }
        t.update(extra)
        return t

    def solution(self, attack: str, **subst: object) -> Solution:
        src = (ATTACKS / f"{attack}.py").read_text()
        src = src.replace("__TARGETS__", repr(json.dumps(self.targets(**subst.pop("targets", {})))))
        for k, v in subst.items():
            src = src.replace(f"__{k}__", str(v))
        return make_solution(f"attack_{attack}", src, self.definition)

    def run(self, attack: str, workload: Optional[Workload] = None, config: Optional[EvalConfig] = None, **subst: object) -> Trace:
        sol = self.solution(attack, **subst)
        build = _shim_build(sol, self.cache)
        return evaluate_via_worker(
            self.definition, sol, workload or rms_workload(16), build, config or self.config, dataset_root=self.dataset,
        )

    def run_good(self, workload: Optional[Workload] = None) -> Trace:
        return evaluate_via_worker(
            self.definition, self.good, workload or rms_workload(8), self.good_build, self.config, dataset_root=self.dataset,
        )

    def breaches(self) -> list:
        """Files an attack could have left behind (their names carry the marker)."""
        home = Path(os.path.expanduser("~"))
        return [p for p in (REPO / self.marker, home / self.marker, self.worker_dir / self.marker, Path("/tmp") / self.marker) if p.exists()]

    def cleanup(self) -> None:
        for p in self.breaches():
            p.unlink()


@contextmanager
def running_lab(tmp: Path, env: Optional[Dict[str, str]] = None) -> Iterator[Lab]:
    """A Lab whose confined CPU worker runs with `env` added to its environment, shut down and
    cleaned after."""
    lab = Lab(tmp)
    lab.start(env=env)
    try:
        yield lab
    finally:
        shutdown_worker("cpu", lab.config)
        lab.cleanup()


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with running_lab(tmp_path_factory.mktemp("security")) as lab:
        yield lab


@pytest.fixture
def unchanged(lab: Lab) -> Iterator[Callable[[], None]]:
    """Digests of the dataset, the build cache's other artifacts and the project, compared after."""
    before = {n: tree_digest(p) for n, p in (("dataset", lab.dataset), ("artifact", Path(lab.good_build["artifact_dir"])), ("project", REPO))}

    def check() -> None:
        assert not lab.breaches(), f"files written outside the sandbox: {lab.breaches()}"
        for name, p in (("dataset", lab.dataset), ("artifact", Path(lab.good_build["artifact_dir"]))):
            assert tree_digest(p) == before[name], f"the {name} changed"
        after = tree_digest(REPO)
        changed = [k for k in set(before["project"]) | set(after) if before["project"].get(k) != after.get(k)]
        if not os.environ.get("CI"):
            # on a developer's machine other people may edit the checkout while this runs: there,
            # only the files the attacks aim at count (CI checks the whole tree)
            changed = [k for k in changed if lab.marker in k or k.endswith("bench/timing.py")]
        assert not changed, f"project files changed: {changed}"

    yield check
    check()


def flags(t: Trace) -> set:
    ev = t.evaluation
    return set((ev.correctness.extra or {}).get("flags", [])) if ev and ev.correctness else set()


__all__ = ["SECRET", "Lab", "flags", "tree_digest", "env_vars", "running_lab", "GOOD_VR", "shutil"]
