"""Fixtures for the report tests: one dataset on disk (built from the data models) and a CLI runner."""
from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Callable, Tuple

import pytest

from flashinfer_bench.cli.main import main

from . import dataset as ds


@pytest.fixture(scope="session")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report-dataset")
    ds.build().to_path(root)
    return root


@pytest.fixture(scope="session")
def small_dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Only the gemm definition (one device): quick to plot."""
    from flashinfer_bench.data import TraceSet

    full = ds.build()
    small = TraceSet()
    small.add_definition(full.get_definition("gemm_n256_k256"))
    for s in full.solutions_for("gemm_n256_k256"):
        small.add_solution(s)
    small.add_traces(full.traces_for("gemm_n256_k256"))
    root = tmp_path_factory.mktemp("report-small")
    small.to_path(root)
    return root


@pytest.fixture(scope="session")
def html_report(dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML report of the test dataset, written once (plots take a few seconds)."""
    from flashinfer_bench.report import write_report

    out = tmp_path_factory.mktemp("report-html")
    skipped = [
        {"definition": "rmsnorm_h4096", "solution": "cuda_vec", "workload": "rms-b8", "reason": "CUDA solution needs a GPU"},
        {"definition": "gemm_n256_k256", "solution": "gemm_torch", "workload": "gemm-m65536", "reason": "workload above the CPU size limit"},
    ]
    return write_report(dataset_dir, out, skipped=skipped)


CliResult = Tuple[int, str, str]


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """Run `flashinfer-bench ARGS...` in-process; returns (exit code, stdout, stderr)."""

    def run(*args: str) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                rc = main(list(args))
            except SystemExit as e:  # argparse errors
                rc = int(e.code or 0)
        return rc, out.getvalue(), err.getvalue()

    return run
