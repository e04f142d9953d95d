"""Paged GQA decode (page_size 1) in PyTorch: one padded, masked batch instead of a loop over requests.

The requests' page lists are laid out as rows of a [batch, max_len] page table (one host sync
to read max_len); K and V are gathered in bf16 straight from the cache (the cache itself is never
converted), upcast to fp32, and the 4 query heads of each KV head are handled as one [4, D] x
[D, L] matmul per (request, KV head) through a single batched matmul. Softmax and the base-2 lse
are fp32; padded positions are masked to -inf. Value-returning.
"""
import math

import torch

LOG2E = 1.0 / math.log(2.0)


@torch.no_grad()
def run(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale):
    batch, num_qo_heads, head_dim = q.shape
    num_kv_heads = k_cache.shape[2]
    group = num_qo_heads // num_kv_heads
    device = q.device
    if batch == 0:
        return (torch.empty_like(q), torch.empty(0, num_qo_heads, dtype=torch.float32, device=device))

    starts = kv_indptr[:-1].long()
    lens = kv_indptr[1:].long() - starts
    max_len = int(lens.max())
    if max_len == 0:
        return (torch.zeros_like(q),
                torch.full((batch, num_qo_heads), -math.inf, dtype=torch.float32, device=device))
    pos = torch.arange(max_len, device=device)
    valid = pos < lens[:, None]                                        # [B, L]
    entry = torch.minimum(starts[:, None] + pos, (starts + lens - 1).clamp(min=0)[:, None])
    pages = kv_indices.long()[entry]                                   # [B, L], padding repeats a real page

    k = k_cache[:, 0][pages]                                           # [B, L, KV, D] bf16
    v = v_cache[:, 0][pages]
    k = k.permute(0, 2, 3, 1).float()                                  # [B, KV, D, L]
    v = v.permute(0, 2, 1, 3).float()                                  # [B, KV, L, D]
    qg = q.view(batch, num_kv_heads, group, head_dim).float() * sm_scale

    logits = torch.matmul(qg, k)                                       # [B, KV, G, L]
    logits.masked_fill_(~valid[:, None, None, :], -math.inf)
    lse = torch.logsumexp(logits, dim=-1)                              # [B, KV, G]
    probs = torch.exp(logits - lse[..., None])
    probs = torch.nan_to_num_(probs, nan=0.0)                          # requests without pages
    out = torch.matmul(probs, v)                                       # [B, KV, G, D]
    return (out.reshape(batch, num_qo_heads, head_dim).to(q.dtype),
            (lse * LOG2E).reshape(batch, num_qo_heads))
