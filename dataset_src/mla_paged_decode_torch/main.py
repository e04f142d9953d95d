"""Paged MLA decode (page_size 1) in PyTorch: one padded, masked batch, one 576-wide QK^T.

The key of a token is [ckv, kpe] (512 + 64) and its value is ckv, so the query is concatenated
as [q_nope, q_pe] and QK^T is a single batched matmul over 576 columns; PV reuses the gathered
ckv. The requests are laid out as rows of a [batch, max_len] page table (one host sync for
max_len); the cache is gathered in bf16 and upcast to fp32 only for the gathered tokens.
fp32 softmax, base-2 lse, masked padding. Value-returning.
"""
import math

import torch

LOG2E = 1.0 / math.log(2.0)


@torch.no_grad()
def run(q_nope, q_pe, ckv_cache, kpe_cache, kv_indptr, kv_indices, sm_scale):
    batch, num_heads, d_ckv = q_nope.shape
    device = q_nope.device
    if batch == 0:
        return (torch.empty_like(q_nope), torch.empty(0, num_heads, dtype=torch.float32, device=device))
    starts = kv_indptr[:-1].long()
    lens = kv_indptr[1:].long() - starts
    max_len = int(lens.max())
    if max_len == 0:
        return (torch.zeros_like(q_nope),
                torch.full((batch, num_heads), -math.inf, dtype=torch.float32, device=device))
    pos = torch.arange(max_len, device=device)
    valid = pos < lens[:, None]                                         # [B, L]
    entry = torch.minimum(starts[:, None] + pos, (starts + lens - 1).clamp(min=0)[:, None])
    pages = kv_indices.long()[entry]                                    # [B, L]

    kv = torch.cat([ckv_cache[:, 0][pages], kpe_cache[:, 0][pages]], dim=-1).float()  # [B, L, 576]
    qf = torch.cat([q_nope, q_pe], dim=-1).float() * sm_scale           # [B, H, 576]
    logits = torch.matmul(qf, kv.transpose(1, 2))                       # [B, H, L]
    logits.masked_fill_(~valid[:, None, :], -math.inf)
    lse = torch.logsumexp(logits, dim=-1)                               # [B, H]
    probs = torch.nan_to_num_(torch.exp(logits - lse[..., None]), nan=0.0)
    out = torch.matmul(probs, kv[..., :d_ckv])                          # [B, H, 512]
    return out.to(q_nope.dtype), lse * LOG2E
