"""fp8 block-scale MoE with DeepSeek-V3 routing in PyTorch: one batched matmul per GEMM.

Routing is the reference's (sigmoid, group top-2 sums, best 2 of 4 groups, top 4 experts,
weights from the unbiased scores). The (token, local expert) pairs are then sorted by expert
and scattered into a padded [8, max_tokens_per_expert, hidden] batch (one host sync reads the
largest count), so GEMM1 and GEMM2 of all local experts are one torch.bmm each instead of a loop.
Dequantisation multiplies each 128x128 block by its scale through a broadcast view (no
repeat_interleave copies). fp32 math, bf16 output. Value-returning.
"""
import torch

BLOCK = 128
TOP_K = 4
N_GROUP = 4
TOPK_GROUP = 2


def _dequant(w, scale):
    """[E, R, C] fp8 and [E, R/128, C/128] scales -> [E, R, C] fp32."""
    e, r, c = w.shape
    wf = w.float().view(e, r // BLOCK, BLOCK, c // BLOCK, BLOCK)
    return (wf * scale.float()[:, :, None, :, None]).view(e, r, c)


@torch.no_grad()
def run(routing_logits, routing_bias, hidden_states, hidden_states_scale, gemm1_weights,
        gemm1_weights_scale, gemm2_weights, gemm2_weights_scale, local_expert_offset,
        routed_scaling_factor):
    T, E = routing_logits.shape
    EL, N1, H = gemm1_weights.shape
    I = N1 // 2
    device = hidden_states.device
    out = torch.zeros((T, H), dtype=torch.float32, device=device)
    if T == 0:
        return out.to(torch.bfloat16)

    # routing
    s = torch.sigmoid(routing_logits.float())
    biased = s + routing_bias.float()
    grouped = biased.view(T, N_GROUP, E // N_GROUP)
    group_score = grouped.topk(2, dim=-1).values.sum(-1)
    keep = torch.zeros((T, N_GROUP), dtype=torch.bool, device=device)
    keep.scatter_(1, group_score.topk(TOPK_GROUP, dim=-1).indices, True)
    chosen = grouped.masked_fill(~keep[..., None], float("-inf")).view(T, E).topk(TOP_K, dim=-1).indices
    weight = s.gather(1, chosen)
    weight = weight / weight.sum(dim=-1, keepdim=True) * routed_scaling_factor

    # (token, local expert) pairs grouped by expert, padded per expert
    local = chosen - int(local_expert_offset)
    tok, slot = torch.nonzero((local >= 0) & (local < EL), as_tuple=True)
    if tok.numel() == 0:
        return out.to(torch.bfloat16)
    expert = local[tok, slot]
    order = torch.argsort(expert, stable=True)
    tok, slot, expert = tok[order], slot[order], expert[order]
    counts = torch.bincount(expert, minlength=EL)
    first = torch.cumsum(counts, 0) - counts
    row = torch.arange(expert.numel(), device=device) - first[expert]
    max_n = int(counts.max())

    a = (hidden_states.float().view(T, H // BLOCK, BLOCK)
         * hidden_states_scale.float().t()[:, :, None]).view(T, H)
    x = torch.zeros((EL, max_n, H), dtype=torch.float32, device=device)
    x[expert, row] = a[tok]

    g1 = torch.bmm(x, _dequant(gemm1_weights, gemm1_weights_scale).transpose(1, 2))   # [EL, n, 2I]
    h = torch.nn.functional.silu(g1[..., I:]) * g1[..., :I]
    y = torch.bmm(h, _dequant(gemm2_weights, gemm2_weights_scale).transpose(1, 2))    # [EL, n, H]
    out.index_add_(0, tok, y[expert, row] * weight[tok, slot][:, None])
    return out.to(torch.bfloat16)
