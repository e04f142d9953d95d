"""FlashInfer-Bench 0.1.2's apply settings through the public API: ApplyConfig(on_miss_policy=,
aot_ratio=, max_atol=), ApplyConfigRegistry and get_default_registry, enable_apply(path, config).

Real builds of the toy Python solutions (tests/apply/helpers.py), traces recorded for this CPU.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest
import torch

import flashinfer_bench
from flashinfer_bench import ApplyConfig, ApplyConfigRegistry, apply, disable_apply, enable_apply
from flashinfer_bench.apply import ApplyWarning, active_runtime, get_default_registry, stats
from tests.apply.helpers import DEF, fallback_math, trace, write_dataset

NAME = DEF["name"]


@apply(NAME)
def norm(x, weight, eps):
    return fallback_math(x, weight, eps)


W = torch.rand(64, dtype=torch.float16) + 0.5


def call(batch: int) -> torch.Tensor:
    return norm(torch.randn(batch, 64, dtype=torch.float16), W, 1e-6)


@pytest.fixture(scope="module", autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """0.1.2 users point the build cache with FIB_CACHE_PATH (shared by the module's tests)."""
    old = os.environ.get("FIB_CACHE_PATH")
    os.environ["FIB_CACHE_PATH"] = str(tmp_path_factory.mktemp("fib-cache"))
    yield
    if old is None:
        os.environ.pop("FIB_CACHE_PATH", None)
    else:
        os.environ["FIB_CACHE_PATH"] = old


@pytest.fixture(autouse=True)
def _no_leftover_runtime() -> Iterator[None]:
    yield
    while active_runtime() is not None:
        disable_apply()


@pytest.fixture
def dataset(tmp_path: Path) -> str:
    """norm_a wins batch 1 and 2, norm_b wins batch 8: norm_a is the definition's best."""
    return str(write_dataset(tmp_path / "ds", ["norm_a", "norm_b"], [
        trace("norm_a", 1, 0.010), trace("norm_b", 1, 0.030),
        trace("norm_a", 2, 0.010), trace("norm_b", 2, 0.030),
        trace("norm_a", 8, 0.050), trace("norm_b", 8, 0.010),
    ]))


def test_on_miss_policy(dataset: str) -> None:
    with enable_apply(dataset, ApplyConfig(on_miss_policy="fallback_only")):
        call(1), call(4)  # 4 was never measured
        assert stats() == {NAME: {"norm_a": 1, "fallback": 1}}
    with enable_apply(dataset, ApplyConfig(on_miss_policy="use_def_best")):
        call(64)
        assert stats() == {NAME: {"norm_a": 1}}
    assert ApplyConfig(on_miss_policy="use_def_best").on_miss == "definition_best"
    with pytest.raises(ValueError):
        ApplyConfig(on_miss_policy="nearest_please")


def test_aot_ratio_builds_the_top_winners_first_and_the_rest_at_first_use(dataset: str) -> None:
    with enable_apply(dataset, ApplyConfig(aot_ratio=0.5)) as rt:
        assert rt.solutions_built == ["norm_a"]  # wins 2 keys of 3; one of two winners built now
        x = torch.randn(8, 64, dtype=torch.float16)
        out = norm(x, W, 1e-6)  # routed to norm_b, built now
        assert rt.solutions_built == ["norm_a", "norm_b"] and stats() == {NAME: {"norm_b": 1}}
        assert torch.equal(out, fallback_math(x, W, 1e-6))
    with enable_apply(dataset, ApplyConfig(aot_ratio=0.0)) as rt:
        assert rt.solutions_built == []
        call(1)
        assert rt.solutions_built == ["norm_a"] and stats() == {NAME: {"norm_a": 1}}
    with enable_apply(dataset, ApplyConfig()) as rt:  # 1.0, the default: every winner now
        assert rt.solutions_built == ["norm_a", "norm_b"]
    with pytest.raises(ValueError):
        ApplyConfig(aot_ratio=1.5)


def test_error_bounds_filter_traces(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds", ["norm_a", "norm_b"], [
        trace("norm_a", 1, 0.010, rel_err=0.5), trace("norm_b", 1, 0.030, rel_err=1e-4),
    ])
    with enable_apply(str(ds), ApplyConfig(max_atol=1e-2, max_rtol=1e-2)):
        call(1)
        assert stats() == {NAME: {"norm_b": 1}}


def test_registry(dataset: str) -> None:
    reg = get_default_registry().register(NAME, ApplyConfig(on_miss_policy="fallback_only"))
    with pytest.raises(ValueError):
        reg.register(NAME, ApplyConfig())
    reg.register(NAME, ApplyConfig(on_miss_policy="use_def_best"), override=True)
    with enable_apply(dataset, reg):
        call(64)
        assert stats() == {NAME: {"norm_a": 1}}
    # without a default only the registered definitions are applied
    only_other = ApplyConfigRegistry().register_many({"other_definition": ApplyConfig()})
    assert only_other.get(NAME) is None and only_other.get("other_definition") == ApplyConfig()
    with pytest.warns(ApplyWarning, match="selects none of the definitions"):
        rt = enable_apply(dataset, only_other)
    with rt:
        with pytest.warns(ApplyWarning, match="not selected by the config"):
            out = call(1)
        assert out.shape == (1, 64) and stats() == {}
    with enable_apply(dataset_path=dataset, apply_config=ApplyConfigRegistry(per_definition={NAME: ApplyConfig()})):
        call(1)
        assert flashinfer_bench.apply.stats() == {NAME: {"norm_a": 1}}
