"""Ragged causal GQA prefill in PyTorch: one packed-heads matmul per request (chunked if large).

Per request the 4 query heads that share a KV head are packed into the rows of one matrix, so
QK^T is a single batched matmul over the 8 KV heads without repeating K or V:
q [q_len, 8, 4, D] -> [8, q_len * 4, D] times k [8, D, kv_len]. The causal mask (query i sees key
j <= i + kv_len - q_len) is one [q_len, kv_len] boolean tensor broadcast over heads. Queries are
chunked so that the fp32 logits of one step stay under 2^28 elements. fp32 softmax, base-2 lse.
The loop over requests is a Python loop: their lengths differ, and each is a few large kernels.
Value-returning.
"""
import math

import torch

LOG2E = 1.0 / math.log(2.0)
MAX_LOGITS = 1 << 28


@torch.no_grad()
def run(q, k, v, qo_indptr, kv_indptr, sm_scale):
    total_q, num_qo_heads, head_dim = q.shape
    num_kv_heads = k.shape[1]
    group = num_qo_heads // num_kv_heads
    device = q.device
    output = torch.zeros_like(q)
    lse = torch.full((total_q, num_qo_heads), -math.inf, dtype=torch.float32, device=device)

    qo = qo_indptr.tolist()
    kvo = kv_indptr.tolist()
    for b in range(len(qo) - 1):
        q0, q1, k0, k1 = qo[b], qo[b + 1], kvo[b], kvo[b + 1]
        q_len, kv_len = q1 - q0, k1 - k0
        if q_len <= 0 or kv_len <= 0:
            continue
        kb = k[k0:k1].permute(1, 2, 0).float()                        # [KV, D, kv_len]
        vb = v[k0:k1].permute(1, 0, 2).float()                        # [KV, kv_len, D]
        step = max(1, MAX_LOGITS // (num_qo_heads * kv_len))
        kv_pos = torch.arange(kv_len, device=device)
        for c0 in range(0, q_len, step):
            c1 = min(c0 + step, q_len)
            n = c1 - c0
            qc = q[q0 + c0:q0 + c1].view(n, num_kv_heads, group, head_dim)
            qc = qc.permute(1, 0, 2, 3).reshape(num_kv_heads, n * group, head_dim).float() * sm_scale
            logits = torch.matmul(qc, kb).view(num_kv_heads, n, group, kv_len)
            q_pos = torch.arange(c0, c1, device=device) + (kv_len - q_len)
            hidden = kv_pos[None, :] > q_pos[:, None]                  # [n, kv_len]
            logits.masked_fill_(hidden[None, :, None, :], -math.inf)
            m = torch.logsumexp(logits, dim=-1)                        # [KV, n, G]
            probs = torch.nan_to_num_(torch.exp(logits - m[..., None]), nan=0.0)
            out = torch.matmul(probs.view(num_kv_heads, n * group, kv_len), vb)  # [KV, n*G, D]
            out = out.view(num_kv_heads, n, group, head_dim).permute(1, 0, 2, 3)
            output[q0 + c0:q0 + c1] = out.reshape(n, num_qo_heads, head_dim).to(q.dtype)
            lse[q0 + c0:q0 + c1] = (m * LOG2E).permute(1, 0, 2).reshape(n, num_qo_heads)
    return output, lse
