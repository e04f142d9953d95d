from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A fresh artifact cache per test."""
    return tmp_path / "cache"
