"""Shared fixtures for the whole test suite (other areas may add theirs here)."""
from __future__ import annotations

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
