"""Ragged causal GQA prefill in Triton (flash-attention forward, varlen); destination-passing style.

Grid: (query blocks, KV heads). A program owns BLOCK_M = 128 rows = 32 query tokens x the 4
query heads that share one KV head (head-group packing: each K/V tile loaded serves 4 heads),
and streams the request's keys 64 at a time: QK^T and PV on tensor cores with fp32
accumulation, an online softmax in base 2 (exp2, log2(e) folded into the scale). Keys that
every row of the block may see are processed without a mask; only the diagonal band (query i
sees key j <= i + kv_len - q_len) is masked, and keys past the band are never loaded.

Varlen without a host sync: the grid has cdiv(total_q, 32) + batch programs along the first axis
(an upper bound on the sum over requests of cdiv(q_len, 32)); an inclusive cumsum of blocks per
request (one small torch op) lets each program find its request by binary search; spare
programs exit. Within a request the blocks nearest the end of the causal triangle (the most
work) start first. A query that sees no key gets output 0 and lse -inf.
"""
import os

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
BLOCK_M = 128   # rows per program: (BLOCK_M // group) tokens x group heads
BLOCK_N = 64    # keys per step
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
def _attend(acc, l_i, m_i, q, qk_scale, k_base, v_base, stride_kt, stride_vt, offs_d, row_tok,
            start, end, limit, kv_len,
            BLOCK_N: tl.constexpr, MASKED: tl.constexpr, DOT_F32: tl.constexpr):
    # keys [start, end) of the request; MASKED: key j visible to a row iff j <= row_tok + limit
    for n0 in range(start, end, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        if MASKED:
            n_ok = offs_n < kv_len
            k = tl.load(k_base + offs_n[:, None] * stride_kt + offs_d[None, :], mask=n_ok[:, None], other=0.0)
            v = tl.load(v_base + offs_n[:, None] * stride_vt + offs_d[None, :], mask=n_ok[:, None], other=0.0)
        else:
            k = tl.load(k_base + offs_n[:, None] * stride_kt + offs_d[None, :])
            v = tl.load(v_base + offs_n[:, None] * stride_vt + offs_d[None, :])
        s = _dot(q, tl.trans(k), DOT_F32) * qk_scale                   # logits * log2(e), fp32
        if MASKED:
            vis = (offs_n[None, :] <= row_tok[:, None] + limit) & n_ok[None, :]
            s = tl.where(vis, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        if MASKED:  # a row may have seen no key yet: keep exp2 away from (-inf) - (-inf)
            m_new_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        else:
            m_new_safe = m_new
        alpha = tl.exp2(m_i - m_new_safe)
        p = tl.exp2(s - m_new_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + _dot(p.to(v.dtype), v, DOT_F32)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _prefill_kernel(
    Q, K, V, QO_INDPTR, KV_INDPTR, BLK_CUM, O, LSE,
    qk_scale, batch,
    stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh, stride_ot, stride_oh, stride_lt,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    DOT_F32: tl.constexpr,
):
    TOK_M: tl.constexpr = BLOCK_M // GROUP
    pid = tl.program_id(0)
    kvh = tl.program_id(1)

    # request of this program: the first b with BLK_CUM[b] > pid (binary search)
    lo = pid * 0
    hi = lo + batch
    while lo < hi:
        mid = (lo + hi) // 2
        right = tl.load(BLK_CUM + mid) <= pid
        lo = tl.where(right, mid + 1, lo)
        hi = tl.where(right, hi, mid)
    b = lo
    if b < batch:
        q0 = tl.load(QO_INDPTR + b)
        q_len = tl.load(QO_INDPTR + b + 1) - q0
        k0 = tl.load(KV_INDPTR + b)
        kv_len = tl.load(KV_INDPTR + b + 1) - k0
        n_blk = tl.cdiv(q_len, TOK_M)
        blk = n_blk - 1 - (pid - (tl.load(BLK_CUM + b) - n_blk))   # last block first
        m_start = blk * TOK_M

        rows = tl.arange(0, BLOCK_M)
        row_tok = m_start + rows // GROUP                           # token within the request
        row_head = kvh * GROUP + rows % GROUP                       # query head
        row_ok = row_tok < q_len
        offs_d = tl.arange(0, HEAD_DIM)
        q_rows = (q0 + row_tok).to(tl.int64)
        q = tl.load(Q + q_rows[:, None] * stride_qt + row_head[:, None] * stride_qh + offs_d[None, :],
                    mask=row_ok[:, None], other=0.0)

        k_base = K + k0.to(tl.int64) * stride_kt + kvh * stride_kh
        v_base = V + k0.to(tl.int64) * stride_vt + kvh * stride_vh
        limit = kv_len - q_len                                       # query i sees keys j <= i + limit
        last_tok = tl.minimum(m_start + TOK_M, q_len) - 1
        full_end = tl.minimum(tl.maximum(m_start + limit + 1, 0), kv_len)  # seen by every row
        full_end = (full_end // BLOCK_N) * BLOCK_N
        band_end = tl.minimum(tl.maximum(last_tok + limit + 1, 0), kv_len)

        m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
        l_i = tl.zeros([BLOCK_M], tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, qk_scale, k_base, v_base, stride_kt, stride_vt, offs_d, row_tok,
                                0, full_end, limit, kv_len, BLOCK_N, False, DOT_F32)
        acc, l_i, m_i = _attend(acc, l_i, m_i, q, qk_scale, k_base, v_base, stride_kt, stride_vt, offs_d, row_tok,
                                full_end, band_end, limit, kv_len, BLOCK_N, True, DOT_F32)

        has = l_i > 0.0
        l_safe = tl.where(has, l_i, 1.0)
        out = acc / l_safe[:, None]
        tl.store(O + q_rows[:, None] * stride_ot + row_head[:, None] * stride_oh + offs_d[None, :],
                 out.to(O.dtype.element_ty), mask=row_ok[:, None])
        tl.store(LSE + q_rows * stride_lt + row_head, tl.where(has, m_i + tl.log2(l_safe), float("-inf")),
                 mask=row_ok)


def run(q, k, v, qo_indptr, kv_indptr, sm_scale, output, lse):
    total_q, num_qo_heads, head_dim = q.shape
    num_kv_heads = k.shape[1]
    group = num_qo_heads // num_kv_heads
    batch = qo_indptr.shape[0] - 1
    if total_q == 0 or batch <= 0:
        return
    assert q.stride(2) == 1 and k.stride(2) == 1 and v.stride(2) == 1
    assert output.stride(2) == 1 and lse.stride(1) == 1
    tok_m = BLOCK_M // group
    q_lens = qo_indptr[1:] - qo_indptr[:-1]
    blk_cum = torch.cumsum(torch.div(q_lens + (tok_m - 1), tok_m, rounding_mode="floor"), 0, dtype=torch.int32)
    grid = (triton.cdiv(total_q, tok_m) + batch, num_kv_heads)
    _prefill_kernel[grid](
        q, k, v, qo_indptr, kv_indptr, blk_cum, output, lse,
        float(sm_scale) * LOG2E, batch,
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
        output.stride(0), output.stride(1), lse.stride(0),
        GROUP=group, HEAD_DIM=head_dim, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, DOT_F32=_DOT_F32,
        num_warps=8, num_stages=2,
    )
