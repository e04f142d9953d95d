"""FlashInfer-Bench 0.1.2's tracing calls: enable_tracing(dataset_path, config) positionally,
TracingConfigRegistry, and TracingConfig's 0.1.2 spellings (input_dump_policy, filter_policy)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from flashinfer_bench import TracingConfig, TracingConfigRegistry, disable_tracing, enable_tracing
from flashinfer_bench.data import TraceSet
from tests.tracing.toy import gather, rmsnorm, workload_lines, write_dataset

W = torch.ones(64, dtype=torch.float16)


def test_upstream_spellings_map_to_ours() -> None:
    c = TracingConfig(input_dump_policy="dump_int", filter_policy="keep_first_k", filter_policy_kwargs={"k": 3})
    assert (c.tensor_dump_policy, c.dedup_policy, c.k) == ("dump_non_float", "keep_first_k", 3)
    c = TracingConfig(filter_policy="keep_first_k_by_axes")
    assert (c.tensor_dump_policy, c.dedup_policy, c.k) == ("dump_none", "shape_only", 1)  # 0.1.2's defaults
    c = TracingConfig(input_dump_policy=["x"])
    assert (c.tensor_dump_policy, c.dedup_policy) == (("x",), "keep_all")
    assert TracingConfig(filter_policy="keep_first").k == 1
    for bad in ({"filter_policy": "attention"}, {"filter_policy": "keep_none"}, {"filter_policy": "keep_first_k"}):
        with pytest.raises(ValueError):
            TracingConfig(**bad)


def test_registry_and_positional_dataset_path(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds")
    reg = TracingConfigRegistry().register(
        "toy_rmsnorm_h64", TracingConfig(input_dump_policy="dump_all", filter_policy="keep_first_k",
                                         filter_policy_kwargs={"k": 2}))
    with pytest.raises(ValueError):
        reg.register("toy_rmsnorm_h64", TracingConfig())
    assert reg.get("toy_gather_d8") is None
    enable_tracing(str(ds), reg)  # 0.1.2's order: dataset path, then the config
    for b in (1, 2, 3):
        rmsnorm(torch.randn(b, 64).half(), W, 1e-6)
    gather(torch.randn(5, 8), torch.tensor([0, 4], dtype=torch.int32))  # not registered: not traced
    disable_tracing()
    lines = workload_lines(ds, "rmsnorm", "toy_rmsnorm_h64")
    assert [ln["workload"]["axes"] for ln in lines] == [{"batch": 1}, {"batch": 2}]
    assert lines[0]["workload"]["inputs"]["x"]["type"] == "safetensors"
    assert workload_lines(ds, "gather", "toy_gather_d8") == []
    # a default traces every definition of the dataset; dump_int saves the int32 indices only
    everything = TracingConfigRegistry(default=TracingConfig(input_dump_policy="dump_int"))
    with enable_tracing(dataset_path=str(ds), tracing_config=everything):
        gather(torch.randn(5, 8), torch.tensor([1, 2, 3], dtype=torch.int32))
    (line,) = workload_lines(ds, "gather", "toy_gather_d8")
    assert line["workload"]["inputs"]["idx"]["type"] == "safetensors"
    assert line["workload"]["inputs"]["table"]["type"] == "random"
    assert TraceSet.from_path(ds).errors == []
