"""Shipped per-op-type settings for the FlashInfer Trace families: input generators, check, tolerance.

Chosen by a definition's `op_type` (a declared field), never by its name. Each entry may hold:

- `inputs`: generator specs per input name (see `input_specs.py`); names a definition lacks are
  ignored, so one entry serves a family's decode and prefill definitions;
- `check`: which correctness check runs (`elementwise`, `matched_ratio`, `sampling`, see
  `bench/checks.py`);
- `tolerance`: {atol, rtol} for every output, under a definition's own `tolerance` and the
  config's `rtol`/`atol`.

Override any of it in the config (`op_type_evaluation.<op_type>` or
`definition_evaluation.<definition>`, same keys); `flashinfer-bench inputs` prints what applies.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, Optional

# bf16 attention outputs; lse is float32 but is computed from bf16 inputs in every real kernel
ATTENTION_TOLERANCE = {"atol": 1e-2, "rtol": 1.6e-2}

_PAGED_KV = {
    # queries per request (prefill); decode definitions have no qo_indptr
    "qo_indptr": {"kind": "offsets", "total": "total_q"},
    # pages per request; with queries, enough pages that kv_len >= q_len (causal)
    "kv_indptr": {"kind": "offsets", "total": "num_kv_indices", "cover": "qo_indptr", "cover_unit": "page_size"},
    # distinct page ids inside the cache
    "kv_indices": {"kind": "indices", "high": "num_pages"},
    "kv_last_page_len": {"kind": "last_page_len", "page_size": "page_size", "indptr": "kv_indptr", "cover": "qo_indptr"},
}

# a workload that gives no softmax scale gets FlashInfer's default
_GQA_SCALE = {"sm_scale": {"kind": "uniform", "low": "1/sqrt(head_dim)", "high": "1/sqrt(head_dim)"}}
# DeepSeek MLA/DSA/NSA: the scale of the pre-absorption head dim (128 nope + 64 rope)
_MLA_SCALE = {"sm_scale": {"kind": "uniform", "low": "1/sqrt(192)", "high": "1/sqrt(192)"}}

OP_TYPE_DEFAULTS: Dict[str, Dict[str, Any]] = {
    "gqa_paged": {"inputs": {**_PAGED_KV, **_GQA_SCALE}, "tolerance": ATTENTION_TOLERANCE},
    "mla_paged": {"inputs": {**_PAGED_KV, **_MLA_SCALE}, "tolerance": ATTENTION_TOLERANCE},
    "mla_ragged": {
        "inputs": {
            "qo_indptr": {"kind": "offsets", "total": "total_q"},
            "kv_indptr": {"kind": "offsets", "total": "total_kv", "cover": "qo_indptr"},
            "sm_scale": {"kind": "uniform", "low": "1/sqrt(qk_dim)", "high": "1/sqrt(qk_dim)"},
        },
        "tolerance": ATTENTION_TOLERANCE,
    },
    "gqa_ragged": {
        "inputs": {
            "qo_indptr": {"kind": "offsets", "total": "total_q"},
            "kv_indptr": {"kind": "offsets", "total": "total_kv", "cover": "qo_indptr"},
            **_GQA_SCALE,
        },
        "tolerance": ATTENTION_TOLERANCE,
    },
    "dsa_paged": {
        "inputs": {
            **_PAGED_KV,
            # top-k token slots of the cache per query token; -1 pads rows when the cache is smaller
            "sparse_indices": {"kind": "indices", "high": "num_pages * page_size", "per_row": True},
            **_MLA_SCALE,
            # the top-k indexer's inputs: sequence lengths the block table covers, pages in the cache,
            # positive queries and weights (relu(q.k) of a negative query zeroes every score)
            "seq_lens": {"kind": "integers", "low": 1, "high": "max_num_pages * page_size"},
            "block_table": {"kind": "indices", "high": "num_pages", "per_row": True},
            "weights": {"kind": "uniform", "low": 0.0, "high": 1.0},
            "q_index_fp8": {"kind": "uniform", "low": 0.0, "high": 1.0},
            # fp8 values and fp32 scales packed in one byte tensor: bytes 0..63 are finite positive
            # fp8 values and make scales below 4
            "k_index_cache_fp8": {"kind": "integers", "low": 0, "high": 63},
        },
        "tolerance": ATTENTION_TOLERANCE,
    },
    "nsa_paged": {
        "inputs": {
            "sparse_indices": {"kind": "indices", "high": "num_pages * page_size", "per_row": True},
            "seq_lens": {"kind": "integers", "low": 1, "high": "max_seq_len"},
            "page_table": {"kind": "indices", "high": "num_pages", "per_row": True},
            **_MLA_SCALE,
        },
        "tolerance": ATTENTION_TOLERANCE,
    },
    "gdn": {
        "inputs": {
            "cu_seqlens": {"kind": "offsets", "total": "total_seq_len"},
            "initial_state_indices": {"kind": "indices", "high": "pool_size"},
            # gated delta nets run on L2-normalised q/k: unit-scale rows keep the recurrence bounded
            "q": {"kind": "normal", "mean": 0.0, "std": "1/sqrt(head_size)"},
            "k": {"kind": "normal", "mean": 0.0, "std": "1/sqrt(head_size)"},
            "scale": {"kind": "uniform", "low": "1/sqrt(head_size)", "high": "1/sqrt(head_size)"},
        },
    },
    "rope": {"inputs": {"positions": {"kind": "indices", "high": "max_seq_len", "unique": False}}},
    "embedding": {"inputs": {"input_ids": {"kind": "indices", "high": "vocab_size", "unique": False}}},
    "topk": {"inputs": {"k": {"kind": "integers", "low": "k", "high": "k"}}},
    "sampling": {
        "inputs": {
            "probs": {"kind": "probabilities", "scale": 3.0},
            "top_k": {"kind": "integers", "low": 1, "high": "min(vocab_size, 256)"},
            "top_p": {"kind": "uniform", "low": 0.5, "high": 0.95},
            "min_p": {"kind": "uniform", "low": 0.0, "high": 0.2},
        },
        "check": {"kind": "sampling"},
    },
    "moe": {
        "inputs": {
            "routing_bias": {"kind": "normal", "mean": 0.0, "std": 0.1},
            # fp8/fp4 block scales: positive, about amax/448 of a unit-scale tensor
            "*_scale": {"kind": "uniform", "low": 0.005, "high": 0.02},
            "local_expert_offset": {
                "kind": "integers", "low": 0, "high": "num_experts - num_local_experts",
                "multiple_of": "num_local_experts",
            },
            "routed_scaling_factor": {"kind": "uniform", "low": 1.0, "high": 3.0},
            "*_scalar": {"kind": "uniform", "low": 0.005, "high": 0.02},
            # pre-routed MoE: expert ids per token inside the expert range, weights that sum to 1
            "topk_ids": {"kind": "indices", "high": "num_experts", "per_row": True},
            "topk_weights": {"kind": "probabilities", "scale": 1.0},
            # unquantised expert weights: centred, or every gate's SiLU saturates to 0 for a sign
            "w1": {"kind": "normal", "mean": 0.0, "std": 1.0},
            "w2": {"kind": "normal", "mean": 0.0, "std": 1.0},
        },
        "check": {"kind": "matched_ratio", "required": 0.95},
        "tolerance": ATTENTION_TOLERANCE,
    },
}


def op_type_defaults(op_type: str) -> Dict[str, Any]:
    """A copy of the shipped settings of one op type ({} for op types we ship nothing for)."""
    return copy.deepcopy(OP_TYPE_DEFAULTS.get(op_type, {}))


def family_settings(
    definition: Any,
    inputs: Optional[Dict[str, Dict[str, Any]]] = None,
    check: Optional[Dict[str, Any]] = None,
    tolerance: Optional[Dict[str, float]] = None,
) -> Dict[str, Any]:
    """What applies to one definition: the shipped op-type settings under the given overrides
    (from the evaluation config). Returns {"inputs": {name: spec}, "check": spec|None,
    "tolerance": {atol, rtol}|None}; `inputs` is resolved to the definition's input names."""
    from .input_specs import resolve_input_specs

    base = op_type_defaults(definition.op_type)
    tol = dict(base.get("tolerance") or {})
    tol.update(tolerance or {})
    return {
        "inputs": resolve_input_specs(definition, [base.get("inputs"), inputs]),
        "check": dict(check) if check else base.get("check"),
        "tolerance": tol or None,
    }
