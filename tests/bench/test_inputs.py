"""Inputs: reproducible from a recorded seed, not N(0,1), dtype-aware, scalars typed, safetensors."""
from __future__ import annotations

import random

import pytest
import torch

from flashinfer_bench.bench.inputs import (
    InputError,
    InputRefresher,
    derive_seed,
    fill_random_,
    make_generator,
    make_inputs,
    poison_,
    random_input_mask,
)
from flashinfer_bench.data import Definition, Workload

from .conftest import rms_definition, rms_workload

CPU = torch.device("cpu")


def _def(inputs, outputs=None) -> Definition:
    return Definition.model_validate(
        {
            "name": "d", "op_type": "t", "axes": {"n": {"type": "var"}, "k": {"type": "const", "value": 64}},
            "inputs": inputs, "outputs": outputs or {"o": {"shape": ["n"], "dtype": "float32"}},
            "reference": "def run(*a):\n    pass\n",
        }
    )


def test_same_seed_same_inputs_other_seed_other_inputs() -> None:
    d, w = rms_definition(), rms_workload(32)
    a = make_inputs(d, w, 7, CPU, None)
    b = make_inputs(d, w, 7, CPU, None)
    c = make_inputs(d, w, 8, CPU, None)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])
    assert derive_seed(1, "u", 0) == derive_seed(1, "u", 0) != derive_seed(1, "u", 1)


def test_random_floats_have_a_mean_and_outliers() -> None:
    d = rms_definition(4096)
    x = make_inputs(d, rms_workload(64), 3, CPU, None)[0].float()
    assert x.dtype == torch.float32 and x.shape == (64, 4096)
    assert abs(float(x.mean())) > 0.2, "inputs must not be centred"
    assert float(x.abs().max()) >= 4.0, "inputs must hold outliers"
    assert 0.8 < float(x.std()) < 1.5


def test_integer_bool_and_fp8_ranges() -> None:
    d = _def({
        "idx": {"shape": ["n"], "dtype": "int32"}, "i8": {"shape": ["n"], "dtype": "int8"},
        "m": {"shape": ["n"], "dtype": "bool"}, "f8": {"shape": ["n", "k"], "dtype": "float8_e4m3fn"},
    })
    idx, i8, m, f8 = make_inputs(d, Workload(axes={"n": 4096}, uuid="w"), 1, CPU, None)
    assert idx.dtype == torch.int32 and 0 <= int(idx.min()) and int(idx.max()) < 1024
    assert i8.dtype == torch.int8 and int(i8.min()) < -64 and int(i8.max()) > 64
    assert m.dtype == torch.bool and 0 < int(m.sum()) < 4096
    assert f8.dtype == torch.float8_e4m3fn and bool(torch.isfinite(f8.float()).all())


def test_scalars_are_typed_by_the_definition() -> None:
    d = _def({
        "x": {"shape": ["n"], "dtype": "float32"}, "eps": {"shape": None, "dtype": "float32"},
        "k2": {"shape": None, "dtype": "int32"}, "flag": {"shape": None, "dtype": "bool"},
    })
    w = Workload(axes={"n": 8}, uuid="w", inputs={
        "eps": {"type": "scalar", "value": 1}, "k2": {"type": "scalar", "value": 3}, "flag": {"type": "scalar", "value": 1},
    })
    _, eps, k2, flag = make_inputs(d, w, 0, CPU, None)
    assert type(eps) is float and eps == 1.0
    assert type(k2) is int and k2 == 3
    assert flag is True


def test_safetensors_inputs_relative_to_the_dataset_root(tmp_path) -> None:
    from safetensors.torch import save_file

    d = _def({"x": {"shape": ["n"], "dtype": "float32"}})
    (tmp_path / "blob").mkdir()
    t = torch.arange(5, dtype=torch.float32)
    save_file({"x": t}, str(tmp_path / "blob" / "x.safetensors"))
    w = Workload(axes={"n": 5}, uuid="w", inputs={"x": {"type": "safetensors", "path": "blob/x.safetensors", "tensor_key": "x"}})
    (x,) = make_inputs(d, w, 0, CPU, tmp_path)
    assert torch.equal(x, t)
    assert random_input_mask(d, w) == [False]
    bad = Workload(axes={"n": 4}, uuid="w", inputs={"x": {"type": "safetensors", "path": "blob/x.safetensors", "tensor_key": "x"}})
    with pytest.raises(InputError, match="shape"):
        make_inputs(d, bad, 0, CPU, tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        make_inputs(d, w, 0, CPU, tmp_path / "elsewhere")


def test_refresh_changes_content_not_address() -> None:
    d, w = rms_definition(), rms_workload(8)
    xs = make_inputs(d, w, 0, CPU, None)
    before = [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]
    ptr = xs[0].data_ptr()
    InputRefresher(xs, random_input_mask(d, w), make_generator(5, CPU), random.Random(5))(xs, random.Random(6))
    assert xs[0].data_ptr() == ptr
    assert not torch.equal(xs[0], before[0])
    assert xs[2] == before[2], "scalars stay"


def test_poison_marks_every_element() -> None:
    f = torch.zeros(10, dtype=torch.float16)
    i = torch.zeros(10, dtype=torch.int32)
    poison_(f)
    poison_(i)
    assert bool(torch.isnan(f).all())
    assert bool((i == torch.iinfo(torch.int32).min).all())
    g = torch.empty(3, 4, dtype=torch.bfloat16)
    fill_random_(g, make_generator(1, CPU), random.Random(1))
    assert bool(torch.isfinite(g.float()).all())
