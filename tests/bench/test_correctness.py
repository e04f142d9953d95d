"""Correctness: tolerances, the element rule, the scale guard, non-finite values, status order."""
from __future__ import annotations

import math

import pytest
import torch

from flashinfer_bench.bench.client import evaluate_via_worker
from flashinfer_bench.bench.correctness import check_structure, compare, normalize_outputs, tolerance_for
from flashinfer_bench.data import Definition

from .conftest import make_solution, rms_definition, rms_workload


def test_tolerance_precedence() -> None:
    d = rms_definition()
    assert tolerance_for(d, "out", None, None) == (1e-3, 1e-2)
    d2 = Definition.model_validate({**d.model_dump(), "tolerance": {"rtol": 0.05}})
    assert tolerance_for(d2, "out", None, None) == (1e-3, 0.05)
    assert tolerance_for(d2, "out", 0.2, 0.3) == (0.3, 0.2)


def test_element_rule_and_recorded_errors() -> None:
    ref = torch.linspace(-4, 4, 1000)
    ok = compare("o", ref * (1 + 5e-3), ref, 1e-3, 1e-2)
    assert ok.ok and 0 < ok.max_abs <= 0.021 and ok.max_rel == pytest.approx(5e-3, rel=1e-3)
    bad = compare("o", ref * 1.05, ref, 1e-3, 1e-2)
    assert not bad.ok and "fail" in bad.reason and bad.n_bad > 0


def test_zeros_fail_even_on_a_tiny_reference() -> None:
    ref = torch.full((1000,), 3e-4) * torch.linspace(0.5, 1.5, 1000)
    c = compare("o", torch.zeros_like(ref), ref, 1e-3, 1e-2)
    assert not c.ok and "scale guard" in c.reason and c.low_signal


def test_unwritten_nan_fails_and_matching_non_finite_passes() -> None:
    ref = torch.randn(100)
    out = ref.clone()
    out[50:] = math.nan
    c = compare("o", out, ref, 1e-3, 1e-2)
    assert not c.ok and c.nonfinite_mismatch == 50 and math.isinf(c.max_abs)
    ref2 = torch.tensor([1.0, math.nan, math.inf, -math.inf])
    assert compare("o", ref2.clone(), ref2, 1e-3, 1e-2).ok
    assert not compare("o", torch.tensor([1.0, 0.0, math.inf, -math.inf]), ref2, 1e-3, 1e-2).ok
    assert not compare("o", torch.tensor([1.0, math.nan, -math.inf, -math.inf]), ref2, 1e-3, 1e-2).ok


def test_integers_are_exact() -> None:
    ref = torch.arange(10, dtype=torch.int32)
    assert compare("o", ref.clone(), ref, 0.0, 0.0).ok
    off = ref.clone()
    off[3] += 1
    assert not compare("o", off, ref, 0.0, 0.0).ok


def test_structure_order_and_lazy_outputs() -> None:
    d = rms_definition()
    shapes = {"out": (4, 256)}
    cpu = torch.device("cpu")
    assert check_structure([torch.empty(4, 256, dtype=torch.float16)], d, shapes, cpu) is None
    p = check_structure([torch.empty(4, 255, dtype=torch.float32)], d, shapes, cpu)
    assert p.status == "INCORRECT_SHAPE"
    assert check_structure([torch.empty(4, 256, dtype=torch.float32)], d, shapes, cpu).status == "INCORRECT_DTYPE"

    class Lazy(torch.Tensor):
        pass

    lazy = torch.empty(4, 256, dtype=torch.float16).as_subclass(Lazy)
    assert check_structure([lazy], d, shapes, cpu).status == "RUNTIME_ERROR"
    # a row with fewer outputs than the definition's (a witness call described as none) is checked
    # on nothing by a pairing with zip: it is a structure problem (session 21, `chain_empty_rows`)
    assert check_structure([], d, shapes, cpu).status == "INCORRECT_SHAPE"
    two = [torch.empty(4, 256, dtype=torch.float16)] * 2
    assert "2 output(s)" in check_structure(two, d, shapes, cpu).message
    items, prob = normalize_outputs((1, 2), ["out"])
    assert items is None and prob.status == "INCORRECT_SHAPE"
    items, prob = normalize_outputs({"out": 5}, ["out"])
    assert items == [5] and prob is None


WRONG_SHAPE = "import torch\ndef run(x, weight, eps):\n    return x[:, :-1].clone()\n"
WRONG_DTYPE = (
    "import torch\ndef run(x, weight, eps):\n"
    "    return torch.nn.functional.rms_norm(x.float(), (x.shape[-1],), weight.float(), float(eps))\n"
)
WRONG_COUNT = "import torch\ndef run(x, weight, eps):\n    return x, x\n"
LOOSE = (
    "import torch\ndef run(x, weight, eps):\n"
    "    return (torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps)).float() * 1.004).half()\n"
)


@pytest.mark.parametrize(
    "src,status",
    [(WRONG_SHAPE, "INCORRECT_SHAPE"), (WRONG_DTYPE, "INCORRECT_DTYPE"), (WRONG_COUNT, "INCORRECT_SHAPE")],
    ids=["shape", "dtype", "count"],
)
def test_status_order_through_the_worker(src, status, rms_def, build, cpu_config) -> None:
    sol = make_solution(f"wrong_{status.lower()}_{abs(hash(src)) % 1000}", src, rms_def)
    t = evaluate_via_worker(rms_def, sol, rms_workload(8), build(sol, rms_def), cpu_config)
    assert t.evaluation.status.value == status, t.evaluation.log


def test_config_tolerance_is_enforced(rms_def, build, cpu_config) -> None:
    sol = make_solution("off_by_0p4_percent", LOOSE, rms_def)
    b = build(sol, rms_def)
    passed = evaluate_via_worker(rms_def, sol, rms_workload(8), b, cpu_config)
    assert passed.evaluation.status.value == "PASSED", passed.evaluation.log
    strict = cpu_config.model_copy(update={"rtol": 1e-3, "atol": 1e-4})
    failed = evaluate_via_worker(rms_def, sol, rms_workload(8), b, strict)
    assert failed.evaluation.status.value == "INCORRECT_NUMERICAL"
    assert failed.evaluation.correctness.max_relative_error > 1e-3
    assert failed.evaluation.correctness.extra["rtol"] == 1e-3


def test_error_maxima_match_compare_and_leave_the_tensors_alone():
    """The witness's error figures (the reference runner's): compare's numbers on finite values,
    non-finite disagreements left to the check, the reference not modified."""
    from flashinfer_bench.bench.correctness import compare, error_maxima

    ref = torch.tensor([1.0, -2.0, 4.0, float("inf"), float("nan"), 0.5])
    out = torch.tensor([1.1, -2.0, 3.0, float("inf"), float("nan"), float("inf")])
    keep = ref.clone()
    got = error_maxima([out], [ref]).tolist()
    assert torch.equal(ref.nan_to_num(), keep.nan_to_num()) and ref.isnan().tolist() == keep.isnan().tolist()
    assert got[0] == pytest.approx(1.0) and got[1] == pytest.approx(0.25)
    finite = compare("x", out[:3], ref[:3], 1.0, 1.0)
    assert got == pytest.approx([finite.max_abs, finite.max_rel])
