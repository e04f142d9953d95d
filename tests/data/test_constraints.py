"""Constraints that read input tensors (the public FlashInfer Trace dataset's), checked safely."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from flashinfer_bench.data import Definition
from flashinfer_bench.data.expr import ExprError, NeedsValues, ShapeOnly, evaluate, truth
from flashinfer_bench.data.validate import validate_dataset

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real-sample"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real-sample is not beside the checkout")


def test_tensor_expressions_evaluate_on_arrays_and_shapes():
    indptr = np.array([0, 3, 7], dtype=np.int32)
    assert truth("num_kv_indices == kv_indptr[-1].item()", {"num_kv_indices": 7, "kv_indptr": indptr})
    assert not truth("num_kv_indices == kv_indptr[-1].item()", {"num_kv_indices": 6, "kv_indptr": indptr})
    assert truth("sparse_indices.shape[0] == num_tokens", {"num_tokens": 4, "sparse_indices": ShapeOnly("s", (4, 8))})
    assert truth("len(kv_indptr) == b + 1 and (kv_indptr[1:] - kv_indptr[:-1]).min() >= 0", {"b": 2, "kv_indptr": indptr})
    with pytest.raises(NeedsValues):
        evaluate("kv_indptr[-1].item() > 0", {"kv_indptr": ShapeOnly("kv_indptr", (3,))})


@pytest.mark.parametrize("expr", [
    "__import__('os').system('true')",
    "kv_indptr.__class__",
    "kv_indptr.tolist()",
    "(lambda: 1)()",
    "[x for x in range(10)]",
    "open('/etc/passwd')",
    "kv_indptr.numpy",
])
def test_unsafe_expressions_are_refused(expr):
    with pytest.raises(ExprError):
        evaluate(expr, {"kv_indptr": np.zeros(3)})


@pytest.mark.parametrize("expr", ["9 ** 9 ** 9", "2 ** 100000", "10 ** 5000 > 1"])
def test_huge_powers_are_refused_fast(expr):
    t0 = time.monotonic()
    with pytest.raises(ExprError, match="larger"):
        evaluate(expr, {})
    assert time.monotonic() - t0 < 0.5


def test_time_limit_stops_an_expression():
    expr = " + ".join(["x.sum()"] * 400)
    with pytest.raises(ExprError, match="time limit"):
        evaluate(expr, {"x": np.ones(2_000_000)}, time_limit_s=0.01)


def _gqa_decode(constraints):
    return Definition.model_validate({
        "name": "d", "op_type": "gqa_paged",
        "axes": {"batch_size": {"type": "var"}, "len_indptr": {"type": "var"}, "num_kv_indices": {"type": "var"},
                 "num_pages": {"type": "var"}},
        "inputs": {"kv_indptr": {"shape": ["len_indptr"], "dtype": "int32"},
                   "kv_indices": {"shape": ["num_kv_indices"], "dtype": "int32"}},
        "outputs": {"o": {"shape": ["batch_size"], "dtype": "float32"}},
        "constraints": constraints,
        "reference": "def run(kv_indptr, kv_indices):\n    return kv_indptr",
    })


def test_constraint_report_defers_value_constraints_and_names_values():
    d = _gqa_decode(["len_indptr == batch_size + 1", "num_kv_indices == kv_indptr[-1].item()"])
    axes = {"batch_size": 2, "len_indptr": 3, "num_kv_indices": 5, "num_pages": 9}
    r = d.constraint_report(axes)
    assert not r.failed and [x[2] for x in r.deferred] == ["kv_indptr"]
    r = d.constraint_report(axes, {"kv_indptr": np.array([0, 1, 4], dtype=np.int32)})
    assert len(r.failed) == 1
    assert "kv_indptr[-1]=4" in r.failed[0].message or "kv_indptr=[0, 1, 4]" in r.failed[0].message
    assert "num_kv_indices=5" in r.failed[0].message
    bad = d.constraint_report({**axes, "len_indptr": 4})
    assert bad.failed and "len_indptr=4" in bad.failed[0].message


def test_uninterpretable_constraint_is_a_warning_not_a_dropped_definition(tmp_path):
    d = _gqa_decode(["kv_indptr.cumsum(0)[-1] > 0", "mystery_name > 0"])
    assert d.problems(strict=True) == []
    findings = d.constraint_findings()
    assert {f for f, _ in findings} == {"constraints[0]", "constraints[1]"}


@needs_real
def test_real_sample_validates_with_only_missing_blob_errors(tmp_path):
    ds = tmp_path / "ds"
    for sub in ("definitions", "workloads"):
        import shutil

        shutil.copytree(REAL / sub, ds / sub)
    problems = validate_dataset(ds)
    errors = [p for p in problems if p.level == "error"]
    assert errors, "the sample names blobs that are not here"
    assert all("not found under the dataset root" in p.message for p in errors), [str(p) for p in errors[:3]]
