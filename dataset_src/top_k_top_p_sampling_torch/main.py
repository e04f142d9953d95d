"""Top-k then top-p sampling in PyTorch without sorting the whole vocabulary.

Only the largest max(top_k) probabilities of each row can survive top-k, so one torch.topk of
that size (sorted, largest first) replaces the full 32000-wide sort (one host sync reads
max(top_k); rows whose top_k keeps everything fall back to k = vocab_size). On those candidates:
keep rank < top_k, renormalise; keep ranks whose preceding mass is <= top_p (top_p >= 1 keeps
all), renormalise; draw with torch.multinomial; top_p <= 0 takes rank 0 (the argmax).
The draw comes from the same filtered distribution as the reference, not the same tokens.
Value-returning.
"""
import torch


@torch.no_grad()
def run(probs, top_k, top_p):
    batch, vocab = probs.shape
    if batch == 0:
        return torch.empty(0, dtype=torch.int64, device=probs.device)
    k = top_k.long()
    k = torch.where((k > 0) & (k < vocab), k, vocab)                   # outside 1..vocab-1: keep all
    k_max = int(k.max())
    vals, idx = torch.topk(probs.float(), k_max, dim=-1, largest=True, sorted=True)

    rank = torch.arange(k_max, device=probs.device)
    dist = torch.where(rank < k[:, None], vals, 0.0)
    dist = dist / dist.sum(dim=-1, keepdim=True)

    p = top_p.float()[:, None]
    cdf = torch.cumsum(dist, dim=-1)
    before = torch.cat([torch.zeros_like(cdf[:, :1]), cdf[:, :-1]], dim=-1)
    dist = torch.where((p >= 1.0) | (before <= p), dist, 0.0)
    dist = dist / dist.sum(dim=-1, keepdim=True)

    r = torch.multinomial(dist, 1).squeeze(1)
    r = torch.where(top_p <= 0.0, 0, r)
    return idx.gather(1, r[:, None]).squeeze(1)
