"""Structured inputs from axes alone: offsets, page tables, last-page lengths, causal cover."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from flashinfer_bench.data import Definition
from flashinfer_bench.data.input_specs import InputSpecError, generate_integer_inputs, resolve_input_specs, spec_problems
from flashinfer_bench.data.op_types import family_settings

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real-sample" / "definitions"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real-sample is not beside the checkout")


def _paged(page_size: int, prefill: bool) -> Definition:
    axes = {"num_pages": {"type": "var"}, "len_indptr": {"type": "var"}, "num_kv_indices": {"type": "var"},
            "page_size": {"type": "const", "value": page_size}, "batch_size": {"type": "var"}}
    inputs = {"kv_indptr": {"shape": ["len_indptr"], "dtype": "int32"},
              "kv_indices": {"shape": ["num_kv_indices"], "dtype": "int32"},
              "kv_last_page_len": {"shape": ["batch_size"], "dtype": "int32"}}
    if prefill:
        axes["total_q"] = {"type": "var"}
        inputs = {"qo_indptr": {"shape": ["len_indptr"], "dtype": "int32"}, **inputs}
    args = ", ".join(inputs)
    return Definition.model_validate({
        "name": f"paged_ps{page_size}", "op_type": "gqa_paged", "axes": axes, "inputs": inputs,
        "outputs": {"o": {"shape": ["batch_size"], "dtype": "float32"}},
        "constraints": ["len_indptr == batch_size + 1", "num_kv_indices == kv_indptr[-1].item()"],
        "reference": f"def run({args}):\n    return kv_indptr",
    })


@pytest.mark.parametrize("seed", range(5))
def test_paged_decode_offsets_indices_and_last_page_lengths(seed):
    d = _paged(64, prefill=False)
    specs = family_settings(d)["inputs"]
    axes = {"batch_size": 7, "len_indptr": 8, "num_kv_indices": 40, "num_pages": 100}
    v = generate_integer_inputs(d, axes, specs, seed)
    indptr, idx, last = v["kv_indptr"], v["kv_indices"], v["kv_last_page_len"]
    assert indptr[0] == 0 and indptr[-1] == 40 and (np.diff(indptr) >= 1).all()
    assert idx.dtype == np.int32 and len(set(idx.tolist())) == 40 and idx.min() >= 0 and idx.max() < 100
    assert last.shape == (7,) and last.min() >= 1 and last.max() <= 64
    assert d.constraint_report(axes, v).failed == []


@pytest.mark.parametrize("page_size", [1, 16])
def test_causal_prefill_covers_every_request(page_size):
    d = _paged(page_size, prefill=True)
    specs = family_settings(d)["inputs"]
    axes = {"batch_size": 5, "len_indptr": 6, "total_q": 300, "num_kv_indices": 400, "num_pages": 500}
    for seed in range(10):
        v = generate_integer_inputs(d, axes, specs, seed)
        q = np.diff(v["qo_indptr"].astype(np.int64))
        pages = np.diff(v["kv_indptr"].astype(np.int64))
        kv_tokens = (pages - 1) * page_size + v["kv_last_page_len"]
        assert v["qo_indptr"][-1] == 300 and v["kv_indptr"][-1] == 400
        assert (kv_tokens >= q).all(), (q, kv_tokens)


def test_axes_that_cannot_cover_share_the_total_or_fail_when_strict():
    d = _paged(1, prefill=True)
    axes = {"batch_size": 2, "len_indptr": 3, "total_q": 40, "num_kv_indices": 4, "num_pages": 8}
    specs = family_settings(d)["inputs"]
    v = generate_integer_inputs(d, axes, specs, 0)
    assert v["kv_indptr"][-1] == 4
    strict = resolve_input_specs(d, [specs, {"kv_indptr": {**specs["kv_indptr"], "strict_cover": True}}])
    with pytest.raises(InputSpecError, match="kv_indptr.*covering qo_indptr"):
        generate_integer_inputs(d, axes, strict, 0)


def test_more_indices_than_pages_repeat_inside_the_cache():
    d = _paged(1, prefill=False)
    v = generate_integer_inputs(d, {"batch_size": 2, "len_indptr": 3, "num_kv_indices": 50, "num_pages": 3},
                                family_settings(d)["inputs"], 1)
    assert set(v["kv_indices"].tolist()) <= {0, 1, 2}


def test_same_seed_same_inputs_other_seed_other_inputs():
    d = _paged(16, prefill=False)
    axes = {"batch_size": 9, "len_indptr": 10, "num_kv_indices": 300, "num_pages": 1000}
    specs = family_settings(d)["inputs"]
    a, b, c = (generate_integer_inputs(d, axes, specs, s) for s in (3, 3, 4))
    assert all((a[k] == b[k]).all() for k in a)
    assert any(not np.array_equal(a[k], c[k]) for k in a)


def test_spec_errors_name_the_field():
    assert spec_problems("inputs.x", {"kind": "offsets"}) == ["inputs.x.total: required for kind 'offsets'"]
    assert "inputs.x.kind" in spec_problems("inputs.x", {"kind": "zipf"})[0]
    assert "inputs.x.bogus" in spec_problems("inputs.x", {"kind": "uniform", "bogus": 1})[0]


def test_globs_and_exact_names_and_layers():
    d = Definition.model_validate({
        "name": "m", "op_type": "moe", "axes": {"n": {"type": "var"}},
        "inputs": {"a_scale": {"shape": ["n"], "dtype": "float32"}, "b_scale": {"shape": ["n"], "dtype": "float32"}},
        "outputs": {"o": {"shape": ["n"], "dtype": "float32"}},
        "reference": "def run(a_scale, b_scale):\n    return a_scale",
    })
    base = family_settings(d)["inputs"]
    assert base["a_scale"]["kind"] == "uniform" and base["b_scale"]["kind"] == "uniform"
    over = family_settings(d, inputs={"b_scale": {"kind": "normal", "mean": 1.0, "std": 0.0}})["inputs"]
    assert over["a_scale"]["kind"] == "uniform" and over["b_scale"]["kind"] == "normal"


@needs_real
@pytest.mark.parametrize("path", sorted(p.relative_to(REAL).as_posix() for p in REAL.rglob("*.json")) if REAL.is_dir() else [])
def test_every_real_definition_gets_constraint_satisfying_inputs(path):
    d = Definition.model_validate(json.loads((REAL / path).read_text()))
    specs = family_settings(d)["inputs"]
    # small but structured axes for whatever var axes the definition has
    axes = {a: 4 for a in d.var_axes}
    for a, v in (("len_indptr", 5), ("batch_size", 4), ("num_tokens", 4), ("total_q", 12), ("total_kv", 20),
                 ("num_kv_indices", 24), ("num_pages", 64), ("seq_len", 3)):
        if a in axes:
            axes[a] = v
    drawn = generate_integer_inputs(d, axes, specs, 0)
    assert d.constraint_report(axes, drawn).failed == []


def _defn(op_type: str, axes: dict, inputs: dict, constraints=()) -> Definition:
    return Definition.model_validate({
        "name": f"t_{op_type}", "op_type": op_type, "axes": axes, "inputs": inputs,
        "outputs": {"o": {"shape": [next(iter(axes))], "dtype": "float32"}}, "constraints": list(constraints),
        "reference": f"def run({', '.join(inputs)}):\n    return None",
    })


def test_other_families_get_in_range_structured_inputs():
    """Families beyond the sample: GDN prefill offsets and state slots, RoPE positions, pre-routed
    MoE expert ids and weights, NSA page tables: every index inside what it indexes."""
    v = {"type": "var"}
    gdn = _defn("gdn", {"num_seqs": v, "len_cu_seqlens": v, "total_seq_len": v, "pool_size": v},
                {"cu_seqlens": {"shape": ["len_cu_seqlens"], "dtype": "int64"},
                 "initial_state_indices": {"shape": ["num_seqs"], "dtype": "int32"}},
                ["total_seq_len == cu_seqlens[-1].item()"])
    axes = {"num_seqs": 3, "len_cu_seqlens": 4, "total_seq_len": 50, "pool_size": 8}
    g = generate_integer_inputs(gdn, axes, family_settings(gdn)["inputs"], 0)
    assert g["cu_seqlens"][0] == 0 and g["cu_seqlens"][-1] == 50 and g["initial_state_indices"].max() < 8
    assert gdn.constraint_report(axes, g).failed == []
    rope = _defn("rope", {"num_tokens": v, "max_seq_len": v}, {"positions": {"shape": ["num_tokens"], "dtype": "int64"}})
    r = generate_integer_inputs(rope, {"num_tokens": 40, "max_seq_len": 16}, family_settings(rope)["inputs"], 0)
    assert r["positions"].max() < 16
    moe = _defn("moe", {"seq_len": v, "top_k": {"type": "const", "value": 4}, "num_experts": {"type": "const", "value": 16}},
                {"topk_ids": {"shape": ["seq_len", "top_k"], "dtype": "int32"}})
    m = generate_integer_inputs(moe, {"seq_len": 5}, family_settings(moe)["inputs"], 0)["topk_ids"]
    assert m.max() < 16 and all(len(set(row)) == 4 for row in m.tolist())
    nsa = _defn("nsa_paged", {"num_tokens": v, "num_pages": v, "page_size": {"type": "const", "value": 64},
                              "topk": {"type": "const", "value": 8}},
                {"sparse_indices": {"shape": ["num_tokens", "topk"], "dtype": "int32"}})
    n = generate_integer_inputs(nsa, {"num_tokens": 3, "num_pages": 2}, family_settings(nsa)["inputs"], 0)["sparse_indices"]
    assert n.max() < 128 and n.min() >= 0
