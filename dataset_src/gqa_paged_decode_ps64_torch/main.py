"""Paged GQA decode (page_size 64, partial last pages) in PyTorch: one padded, masked batch.

Token t of request b is slot t % 64 of page kv_indices[kv_indptr[b] + t // 64]; the request has
(pages - 1) * 64 + kv_last_page_len[b] tokens. The requests are laid out as rows of a
[batch, max_len] (page, slot) table (one host sync to read max_len); K and V are gathered in bf16
straight from the cache, upcast to fp32, and the 4 query heads of each KV head form one
[4, D] x [D, L] product inside a single batched matmul. Softmax and the base-2 lse are fp32;
padded positions are masked to -inf. Value-returning.
"""
import math

import torch

LOG2E = 1.0 / math.log(2.0)


@torch.no_grad()
def run(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):
    batch, num_qo_heads, head_dim = q.shape
    page_size, num_kv_heads = k_cache.shape[1], k_cache.shape[2]
    group = num_qo_heads // num_kv_heads
    device = q.device
    if batch == 0:
        return (torch.empty_like(q), torch.empty(0, num_qo_heads, dtype=torch.float32, device=device))

    starts = kv_indptr[:-1].long()
    n_pages = kv_indptr[1:].long() - starts
    lens = torch.where(n_pages > 0, (n_pages - 1) * page_size + kv_last_page_len.long(), 0)
    max_len = int(lens.max())
    if max_len == 0:
        return (torch.zeros_like(q),
                torch.full((batch, num_qo_heads), -math.inf, dtype=torch.float32, device=device))
    pos = torch.arange(max_len, device=device)
    valid = pos < lens[:, None]                                        # [B, L]
    pos_c = torch.minimum(pos, (lens - 1).clamp(min=0)[:, None])       # padding repeats the last token
    pages = kv_indices.long()[(starts[:, None] + pos_c // page_size).clamp(max=max(kv_indices.numel() - 1, 0))]
    slots = pos_c % page_size

    k = k_cache[pages, slots]                                          # [B, L, KV, D] bf16
    v = v_cache[pages, slots]
    k = k.permute(0, 2, 3, 1).float()                                  # [B, KV, D, L]
    v = v.permute(0, 2, 1, 3).float()                                  # [B, KV, L, D]
    qg = q.view(batch, num_kv_heads, group, head_dim).float() * sm_scale

    logits = torch.matmul(qg, k)                                       # [B, KV, G, L]
    logits.masked_fill_(~valid[:, None, None, :], -math.inf)
    lse = torch.logsumexp(logits, dim=-1)                              # [B, KV, G]
    probs = torch.nan_to_num_(torch.exp(logits - lse[..., None]), nan=0.0)  # requests without pages
    out = torch.matmul(probs, v)                                       # [B, KV, G, D]
    return (out.reshape(batch, num_qo_heads, head_dim).to(q.dtype),
            (lse * LOG2E).reshape(batch, num_qo_heads))
