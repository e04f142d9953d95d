"""The public FlashInfer Trace dataset's families run end to end on the CPU, through the CLI.

Real definitions (../shared/real-sample: paged/ragged GQA, MLA, DSA, sampling, GDN, GEMM, RMSNorm)
with small axes-only workloads, the definition's own reference as the solution: every family's
structured inputs are generated from the axes, satisfy the tensor constraints and PASS; a
workload naming a missing blob is an error of that workload only, and `run` exits 3 after
benchmarking the rest.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "real-sample"
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real-sample is not beside the checkout")

# small var axes per definition (consistent with its static constraints)
AXES = {
    "gqa_paged_decode_h32_kv8_d128_ps1": {"batch_size": 3, "len_indptr": 4, "num_kv_indices": 40, "num_pages": 64},
    "gqa_paged_prefill_causal_h32_kv8_d128_ps1": {"len_indptr": 3, "total_q": 12, "num_kv_indices": 30, "num_pages": 64},
    "gqa_ragged_prefill_causal_h32_kv8_d128": {"len_indptr": 3, "total_q": 10, "total_kv": 24},
    "mla_paged_decode_h16_ckv512_kpe64_ps1": {"batch_size": 2, "len_indptr": 3, "num_kv_indices": 20, "num_pages": 48},
    "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps1": {"num_tokens": 2, "num_pages": 256},
    "gdn_decode_qk8_v16_d128_k_last": {"batch_size": 2},
    "top_k_top_p_sampling_from_probs_v128256": {"batch_size": 2},
    "rmsnorm_h4096": {"batch_size": 4},
    "gemm_n4096_k14336": {"M": 2},
}


def _dataset(root: Path, with_missing_blob: bool) -> Path:
    ds = root / "ds"
    for name, axes in AXES.items():
        src = next(REAL.glob(f"definitions/*/{name}.json"))
        d = json.loads(src.read_text())
        op = d["op_type"]
        (ds / "definitions" / op).mkdir(parents=True, exist_ok=True)
        (ds / "definitions" / op / f"{name}.json").write_text(src.read_text())
        inputs = {}
        if "sm_scale" in d["inputs"]:
            inputs["sm_scale"] = {"type": "scalar", "value": 0.088}
        lines = [{"definition": name, "solution": None, "evaluation": None,
                  "workload": {"uuid": f"{name}-small", "axes": axes, "inputs": inputs}}]
        if with_missing_blob and name == "gqa_paged_decode_h32_kv8_d128_ps1":
            blob = {"type": "safetensors", "path": "./blob/workloads/gone.safetensors", "tensor_key": "kv_indptr"}
            lines.append({"definition": name, "solution": None, "evaluation": None,
                          "workload": {"uuid": f"{name}-blob", "axes": axes, "inputs": {**inputs, "kv_indptr": blob}}})
        (ds / "workloads" / op).mkdir(parents=True, exist_ok=True)
        (ds / "workloads" / op / f"{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        sol = {
            "name": f"ref_{name}", "definition": name, "author": "test", "description": "the reference",
            "spec": {"language": "python", "target_hardware": ["cuda"], "entry_point": "main.py::run",
                     "dependencies": [], "destination_passing_style": False},
            "sources": [{"path": "main.py", "content": d["reference"]}],
        }
        sd = ds / "solutions" / "test" / op / name
        sd.mkdir(parents=True, exist_ok=True)
        (sd / f"ref_{name}.json").write_text(json.dumps(sol))
    return ds


def _traces(ds: Path) -> dict:
    out = {}
    for f in (ds / "traces").rglob("*.jsonl"):
        for line in f.read_text().splitlines():
            t = json.loads(line)
            out[(t["definition"], t["workload"]["uuid"])] = t
    return out


def test_every_family_passes_from_axes_alone_and_a_missing_blob_costs_only_its_workload(tmp_path):
    ds = _dataset(tmp_path, with_missing_blob=True)
    env = {**os.environ, "FIB_CACHE_PATH": str(tmp_path / "cache")}
    r = subprocess.run(
        [sys.executable, "-m", "flashinfer_bench.cli.main", "run", "--local", str(ds), "--device", "cpu",
         "--results", str(tmp_path / "results"), "--cores", "2"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900,
    )
    assert r.returncode == 3, r.stderr[-3000:]
    assert "gone.safetensors" in r.stderr and "has 1 error(s)" in r.stderr
    traces = _traces(ds)
    for name in AXES:
        t = traces.get((name, f"{name}-small"))
        assert t is not None, f"{name}: no trace\n{r.stderr[-3000:]}"
        ev = t["evaluation"]
        assert ev["status"] == "PASSED", f"{name}: {ev['status']}\n{ev['log'][-1500:]}"
        extra = ev["correctness"]["extra"]
        want = "sampling" if name.startswith("top_k") else "elementwise"
        assert extra["check"]["kind"] == want, extra.get("check")
    assert ("gqa_paged_decode_h32_kv8_d128_ps1", "gqa_paged_decode_h32_kv8_d128_ps1-blob") not in traces
    sampling = traces[("top_k_top_p_sampling_from_probs_v128256", "top_k_top_p_sampling_from_probs_v128256-small")]
    chk = sampling["evaluation"]["correctness"]["extra"]["check"]
    assert chk["samples_per_row"] > 0 and 0 <= chk["p_value"] <= 1


def test_validate_and_plan_agree_on_a_violated_tensor_constraint(tmp_path):
    """A blob whose kv_indptr does not end at num_kv_indices: validate names file, line,
    constraint and values; the plan drops that workload with the same message."""
    from safetensors.numpy import save_file

    from flashinfer_bench.data.validate import validate_dataset
    from flashinfer_bench.pipeline.plan import build_plan

    ds = _dataset(tmp_path, with_missing_blob=False)
    name = "gqa_paged_decode_h32_kv8_d128_ps1"
    (ds / "blob").mkdir()
    import numpy as np

    save_file({"kv_indptr": np.array([0, 5, 9, 11], dtype=np.int32)}, str(ds / "blob" / "idx.safetensors"))
    wl = ds / "workloads" / "gqa_paged" / f"{name}.jsonl"
    line = json.loads(wl.read_text())
    line["workload"]["uuid"] = "bad-blob"
    line["workload"]["inputs"]["kv_indptr"] = {"type": "safetensors", "path": "blob/idx.safetensors", "tensor_key": "kv_indptr"}
    wl.write_text(wl.read_text() + json.dumps(line) + "\n")
    v = [str(p) for p in validate_dataset(ds) if p.level == "error"]
    assert len(v) == 1 and f"{name}.jsonl:2" in v[0] and "num_kv_indices == kv_indptr[-1].item()" in v[0], v
    assert "num_kv_indices=40" in v[0] and "kv_indptr[-1]" not in v[0] or "11" in v[0]
    plan = build_plan(ds, "cpu")
    assert [str(p) for p in plan.errors] == v
    assert "bad-blob" not in plan.workloads[name]
