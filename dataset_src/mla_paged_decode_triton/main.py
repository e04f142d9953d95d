"""Paged MLA decode in Triton (flash-decoding over the latent cache); destination-passing style.

Stage 1: one program per (request, KV split) holds all 16 heads as the rows of one tile, so each
cached token's 512-wide ckv and 64-wide kpe are read once for all heads. The split's tokens are
walked 64 at a time: page ids gathered from kv_indices (int64 offsets into the cache),
logits = q_nope . ckv + q_pe . kpe as two tl.dot on tensor cores with fp32 accumulation, online
softmax in base 2, PV against the same ckv tile (the value is ckv). Stage 2 merges the splits'
partial outputs by their log-sum-exp. The number of splits comes from the shapes only (no host
sync): about eight waves of programs on the GPU, at least 128 tokens per split on average; with
one split stage 1 writes output and lse directly. A request without pages gets output 0, lse -inf.
"""
import os

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
MAX_SPLITS = 32
# Tuned on an H100 (batch 16 and 64, 1k-4k tokens per request).
MIN_SPLIT_TOKENS = 128
BLOCK_N = 64
WAVES = 8                # aim for this many waves of programs on the GPU
NUM_WARPS, NUM_STAGES = 8, 2
# Triton's CPU interpreter (TRITON_INTERPRET=1) multiplies bf16 tiles as their raw uint16 bits in
# tl.dot; there the operands are widened to fp32 first (exact: bf16 products fit in fp32).
_DOT_F32 = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@triton.jit
def _dot(a, b, F32: tl.constexpr):
    if F32:
        return tl.dot(a.to(tl.float32), b.to(tl.float32))
    else:
        return tl.dot(a, b)


@triton.jit
def _mla_split_kernel(
    QN, QP, CKV, KPE, KV_INDPTR, KV_INDICES, O, LSE, MID_O, MID_LSE,
    qk_scale, num_splits,
    stride_qnb, stride_qnh, stride_qpb, stride_qph,
    stride_cp, stride_cs, stride_pp, stride_ps,
    stride_ob, stride_oh, stride_lb,
    NUM_HEADS: tl.constexpr, D_CKV: tl.constexpr, D_KPE: tl.constexpr, PAGE_SIZE: tl.constexpr,
    BLOCK_N: tl.constexpr, DIRECT: tl.constexpr, DOT_F32: tl.constexpr,
):
    b = tl.program_id(0)
    split = tl.program_id(1)
    p0 = tl.load(KV_INDPTR + b)
    kv_len = (tl.load(KV_INDPTR + b + 1) - p0) * PAGE_SIZE
    chunk = tl.cdiv(tl.cdiv(kv_len, num_splits), BLOCK_N) * BLOCK_N
    start = split * chunk
    end = tl.minimum(start + chunk, kv_len)

    offs_h = tl.arange(0, NUM_HEADS)
    offs_c = tl.arange(0, D_CKV)
    offs_p = tl.arange(0, D_KPE)
    qn = tl.load(QN + b * stride_qnb + offs_h[:, None] * stride_qnh + offs_c[None, :])
    qp = tl.load(QP + b * stride_qpb + offs_h[:, None] * stride_qph + offs_p[None, :])

    m_i = tl.full([NUM_HEADS], float("-inf"), tl.float32)
    l_i = tl.zeros([NUM_HEADS], tl.float32)
    acc = tl.zeros([NUM_HEADS, D_CKV], tl.float32)
    for n0 in range(start, end, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        n_mask = offs_n < end
        page = tl.load(KV_INDICES + p0 + offs_n // PAGE_SIZE, mask=n_mask, other=0).to(tl.int64)
        slot = offs_n % PAGE_SIZE
        ckv = tl.load(CKV + page[:, None] * stride_cp + slot[:, None] * stride_cs + offs_c[None, :],
                      mask=n_mask[:, None], other=0.0)
        kpe = tl.load(KPE + page[:, None] * stride_pp + slot[:, None] * stride_ps + offs_p[None, :],
                      mask=n_mask[:, None], other=0.0)
        s = (_dot(qn, tl.trans(ckv), DOT_F32) + _dot(qp, tl.trans(kpe), DOT_F32)) * qk_scale
        s = tl.where(n_mask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + _dot(p.to(ckv.dtype), ckv, DOT_F32)
        m_i = m_new

    has = l_i > 0.0
    l_safe = tl.where(has, l_i, 1.0)
    out = acc / l_safe[:, None]
    lse = tl.where(has, m_i + tl.log2(l_safe), float("-inf"))
    if DIRECT:
        tl.store(O + b * stride_ob + offs_h[:, None] * stride_oh + offs_c[None, :], out.to(O.dtype.element_ty))
        tl.store(LSE + b * stride_lb + offs_h, lse)
    else:
        mid = (b * NUM_HEADS + offs_h) * num_splits + split
        tl.store(MID_O + mid[:, None] * D_CKV + offs_c[None, :], out)
        tl.store(MID_LSE + mid, lse)


@triton.jit
def _merge_kernel(MID_O, MID_LSE, O, LSE, num_splits, num_heads, stride_ob, stride_oh, stride_lb,
                  HEAD_DIM: tl.constexpr, SPLITS_P2: tl.constexpr):
    # One program per (request, head): combine the splits' partial results by their lse.
    b = tl.program_id(0)
    h = tl.program_id(1)
    offs_s = tl.arange(0, SPLITS_P2)
    s_mask = offs_s < num_splits
    base = (b * num_heads + h) * num_splits
    lse_s = tl.load(MID_LSE + base + offs_s, mask=s_mask, other=float("-inf"))
    m = tl.max(lse_s, 0)
    m = tl.where(m == float("-inf"), 0.0, m)
    w = tl.exp2(lse_s - m)
    total = tl.sum(w, 0)
    offs_d = tl.arange(0, HEAD_DIM)
    o = tl.load(MID_O + (base + offs_s)[:, None] * HEAD_DIM + offs_d[None, :], mask=s_mask[:, None], other=0.0)
    acc = tl.sum(o * w[:, None], 0)
    has = total > 0.0
    t_safe = tl.where(has, total, 1.0)
    tl.store(O + b * stride_ob + h * stride_oh + offs_d, (acc / t_safe).to(O.dtype.element_ty))
    tl.store(LSE + b * stride_lb + h, tl.where(has, m + tl.log2(t_safe), float("-inf")))


_SMS = {}


def _num_sms(device):
    if device.type != "cuda":
        return 4
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _SMS:
        _SMS[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _SMS[idx]


def run(q_nope, q_pe, ckv_cache, kpe_cache, kv_indptr, kv_indices, sm_scale, output, lse):
    batch, num_heads, d_ckv = q_nope.shape
    d_kpe = q_pe.shape[2]
    page_size = ckv_cache.shape[1]
    if batch == 0:
        return
    assert q_nope.stride(2) == 1 and q_pe.stride(2) == 1
    assert ckv_cache.stride(2) == 1 and kpe_cache.stride(2) == 1
    assert output.stride(2) == 1 and lse.stride(1) == 1
    avg_tokens = kv_indices.shape[0] * page_size // batch
    splits = min(MAX_SPLITS, triton.cdiv(WAVES * _num_sms(q_nope.device), batch),
                 max(1, avg_tokens // MIN_SPLIT_TOKENS))
    splits = max(1, splits)
    direct = splits == 1
    if direct:
        mid_o = mid_lse = output  # unused
    else:
        mid_o = torch.empty((batch, num_heads, splits, d_ckv), dtype=torch.float32, device=q_nope.device)
        mid_lse = torch.empty((batch, num_heads, splits), dtype=torch.float32, device=q_nope.device)
    _mla_split_kernel[(batch, splits)](
        q_nope, q_pe, ckv_cache, kpe_cache, kv_indptr, kv_indices, output, lse, mid_o, mid_lse,
        float(sm_scale) * LOG2E, splits,
        q_nope.stride(0), q_nope.stride(1), q_pe.stride(0), q_pe.stride(1),
        ckv_cache.stride(0), ckv_cache.stride(1), kpe_cache.stride(0), kpe_cache.stride(1),
        output.stride(0), output.stride(1), lse.stride(0),
        NUM_HEADS=num_heads, D_CKV=d_ckv, D_KPE=d_kpe, PAGE_SIZE=page_size,
        BLOCK_N=BLOCK_N, DIRECT=direct, DOT_F32=_DOT_F32, num_warps=NUM_WARPS, num_stages=NUM_STAGES,
    )
    if not direct:
        _merge_kernel[(batch, num_heads)](
            mid_o, mid_lse, output, lse, splits, num_heads,
            output.stride(0), output.stride(1), lse.stride(0),
            HEAD_DIM=d_ckv, SPLITS_P2=triton.next_power_of_2(splits), num_warps=4,
        )
