"""Paged GQA decode in Triton (flash-decoding), page_size 64 with partial last pages; DPS.

A request has (pages - 1) * 64 + kv_last_page_len tokens; token t is slot t % 64 of page
kv_indices[kv_indptr[b] + t // 64]. Stage 1: one program per (request, KV head, KV split). The
4 query heads that share the KV head are the rows of one [16, 128] tile (padded for tl.dot), so
each K/V row is read once per group; the split's tokens are walked 64 at a time (one whole page
per step, splits are whole steps), QK^T and PV on tensor cores with fp32 accumulation, online
softmax in base 2. Stage 2 merges the splits' partial outputs by their log-sum-exp. The number
of splits comes from the shapes only (no host sync): about two waves of programs on the GPU, at
least 256 tokens per split on average; with one split stage 1 writes output and lse directly.
Same kernel as the page_size 1 solution; a request without pages gets output 0, lse -inf.
"""
import math
import os

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
MAX_SPLITS = 16          # KV splits per request at most (flash-decoding)
MIN_SPLIT_TOKENS = 256   # no split shorter than this on average
# Tuned on an H100 (batch 16 and 64, 1k-4k tokens per request): 128-token steps with page_size 1,
# one 64-token page per step otherwise; ~8 waves of programs; 3 pipeline stages.
BLOCK_N_PS1, BLOCK_N = 128, 64
WAVES = 8                # aim for this many waves of programs on the GPU
NUM_WARPS, NUM_STAGES = 4, 3
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
def _decode_split_kernel(
    Q, K, V, KV_INDPTR, KV_INDICES, LAST_LEN, O, LSE, MID_O, MID_LSE,
    qk_scale, num_splits, num_qo_heads,
    stride_qb, stride_qh,
    stride_kp, stride_ks, stride_kh,
    stride_vp, stride_vs, stride_vh,
    stride_ob, stride_oh, stride_lb,
    GROUP: tl.constexpr, BLOCK_H: tl.constexpr, HEAD_DIM: tl.constexpr, PAGE_SIZE: tl.constexpr,
    BLOCK_N: tl.constexpr, HAS_LAST_LEN: tl.constexpr, DIRECT: tl.constexpr, DOT_F32: tl.constexpr,
):
    # One program per (request, KV head, split): the GROUP query heads of the KV head form the
    # rows of one tile (padded to BLOCK_H >= 16 for tl.dot), so K and V are read once per group.
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    split = tl.program_id(2)

    p0 = tl.load(KV_INDPTR + b)
    n_pages = tl.load(KV_INDPTR + b + 1) - p0
    if HAS_LAST_LEN:
        kv_len = tl.where(n_pages > 0, (n_pages - 1) * PAGE_SIZE + tl.load(LAST_LEN + b), 0)
    else:
        kv_len = n_pages * PAGE_SIZE
    # this split's tokens [start, end): equal shares rounded up to whole BLOCK_N steps
    chunk = tl.cdiv(tl.cdiv(kv_len, num_splits), BLOCK_N) * BLOCK_N
    start = split * chunk
    end = tl.minimum(start + chunk, kv_len)

    offs_h = tl.arange(0, BLOCK_H)
    offs_d = tl.arange(0, HEAD_DIM)
    h_mask = offs_h < GROUP
    heads = kvh * GROUP + offs_h
    q = tl.load(Q + b * stride_qb + heads[:, None] * stride_qh + offs_d[None, :],
                mask=h_mask[:, None], other=0.0)

    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, HEAD_DIM], tl.float32)
    for n0 in range(start, end, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        n_mask = offs_n < end
        # token t of the request: slot t % PAGE_SIZE of page kv_indices[p0 + t // PAGE_SIZE]
        page = tl.load(KV_INDICES + p0 + offs_n // PAGE_SIZE, mask=n_mask, other=0).to(tl.int64)
        slot = offs_n % PAGE_SIZE
        k = tl.load(K + page[:, None] * stride_kp + slot[:, None] * stride_ks + kvh * stride_kh
                    + offs_d[None, :], mask=n_mask[:, None], other=0.0)
        s = _dot(q, tl.trans(k), DOT_F32) * qk_scale                          # logits * log2(e), fp32
        s = tl.where(n_mask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + page[:, None] * stride_vp + slot[:, None] * stride_vs + kvh * stride_vh
                    + offs_d[None, :], mask=n_mask[:, None], other=0.0)
        acc = acc * alpha[:, None] + _dot(p.to(v.dtype), v, DOT_F32)
        m_i = m_new

    has = l_i > 0.0                                                     # empty split / request
    l_safe = tl.where(has, l_i, 1.0)
    out = acc / l_safe[:, None]
    lse = tl.where(has, m_i + tl.log2(l_safe), float("-inf"))          # base 2
    if DIRECT:
        tl.store(O + b * stride_ob + heads[:, None] * stride_oh + offs_d[None, :],
                 out.to(O.dtype.element_ty), mask=h_mask[:, None])
        tl.store(LSE + b * stride_lb + heads, lse, mask=h_mask)
    else:
        mid = (b * num_qo_heads + heads) * num_splits + split
        tl.store(MID_O + mid[:, None] * HEAD_DIM + offs_d[None, :], out, mask=h_mask[:, None])
        tl.store(MID_LSE + mid, lse, mask=h_mask)


@triton.jit
def _merge_kernel(MID_O, MID_LSE, O, LSE, num_splits, num_qo_heads, stride_ob, stride_oh, stride_lb,
                  HEAD_DIM: tl.constexpr, SPLITS_P2: tl.constexpr):
    # One program per (request, query head): combine the splits' partial results by their lse.
    b = tl.program_id(0)
    h = tl.program_id(1)
    offs_s = tl.arange(0, SPLITS_P2)
    s_mask = offs_s < num_splits
    base = (b * num_qo_heads + h) * num_splits
    lse_s = tl.load(MID_LSE + base + offs_s, mask=s_mask, other=float("-inf"))
    m = tl.max(lse_s, 0)
    m = tl.where(m == float("-inf"), 0.0, m)
    w = tl.exp2(lse_s - m)                                              # 0 for empty splits
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


def _launch(q, k_cache, v_cache, kv_indptr, kv_indices, last_page_len, sm_scale, output, lse):
    batch, num_qo_heads, head_dim = q.shape
    page_size, num_kv_heads = k_cache.shape[1], k_cache.shape[2]
    group = num_qo_heads // num_kv_heads
    if batch == 0:
        return
    assert q.stride(2) == 1 and k_cache.stride(3) == 1 and v_cache.stride(3) == 1
    assert output.stride(2) == 1 and lse.stride(1) == 1
    # Splits from shapes only (no host sync): enough programs for ~2 waves of the GPU, but
    # splits of at least MIN_SPLIT_TOKENS on average.
    avg_tokens = kv_indices.shape[0] * page_size // batch
    splits = min(MAX_SPLITS, triton.cdiv(WAVES * _num_sms(q.device), batch * num_kv_heads),
                 max(1, avg_tokens // MIN_SPLIT_TOKENS))
    splits = max(1, splits)
    direct = splits == 1
    if direct:
        mid_o = mid_lse = output  # unused
    else:
        mid_o = torch.empty((batch, num_qo_heads, splits, head_dim), dtype=torch.float32, device=q.device)
        mid_lse = torch.empty((batch, num_qo_heads, splits), dtype=torch.float32, device=q.device)
    has_last = last_page_len is not None
    _decode_split_kernel[(batch, num_kv_heads, splits)](
        q, k_cache, v_cache, kv_indptr, kv_indices, last_page_len if has_last else kv_indptr,
        output, lse, mid_o, mid_lse,
        float(sm_scale) * LOG2E, splits, num_qo_heads,
        q.stride(0), q.stride(1),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
        output.stride(0), output.stride(1), lse.stride(0),
        GROUP=group, BLOCK_H=max(16, triton.next_power_of_2(group)), HEAD_DIM=head_dim,
        PAGE_SIZE=page_size, BLOCK_N=BLOCK_N_PS1 if page_size == 1 else BLOCK_N, HAS_LAST_LEN=has_last, DIRECT=direct, DOT_F32=_DOT_F32,
        num_warps=NUM_WARPS, num_stages=NUM_STAGES,
    )
    if not direct:
        _merge_kernel[(batch, num_qo_heads)](
            mid_o, mid_lse, output, lse, splits, num_qo_heads,
            output.stride(0), output.stride(1), lse.stride(0),
            HEAD_DIM=head_dim, SPLITS_P2=triton.next_power_of_2(splits), num_warps=4,
        )


def run(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale, output, lse):
    _launch(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale, output, lse)
