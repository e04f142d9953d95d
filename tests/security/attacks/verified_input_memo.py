"""Class: predictable inputs (an output cache on a cheap sampled fingerprint, unverified).

Tries: key every call on 8 sampled elements of x (fixed positions) and 4 of weight, read as raw
bits (~10 us); a repeated key returns the cached output at once, unverified; a miss computes
`COST` honest RMSNorms and stores it. Pays off if the harness repeats inputs: the refresh pool's
windows (a repeated offset is the same input), the correctness trials' sets reused in the timing
loop or the audit, or the witness's rounds. A fingerprint match is verified (torch.equal against
the kept inputs, a few us) so every hit is right: any gain is the harness repeating inputs.
Expect: contained (the pool has 65537 offsets a random input, so windows hardly repeat; the
witness draws fresh per round) (no hit is wrong, so never rejected for it).
"""
import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1

_cache = {}
_stats = {"hit": 0, "miss": 0}


def _fp(x, weight):
    xf, wf = x.reshape(-1).view(torch.int16), weight.reshape(-1).view(torch.int16)
    n, m = xf.numel(), wf.numel()
    ix = [0, 1, n // 7, n // 3, n // 2, (2 * n) // 3, n - 2, n - 1]
    iw = [0, m // 3, (2 * m) // 3, m - 1]
    return tuple(xf[ix].tolist()) + tuple(wf[iw].tolist()) + tuple(x.shape)


def run(x, weight, eps):
    k = _fp(x, weight)
    hit = _cache.get(k)
    if hit is not None and not (torch.equal(hit[0], x) and torch.equal(hit[1], weight)):
        hit = None
    if hit is not None:
        hit = hit[2]
        _stats["hit"] += 1
        if _stats["hit"] in (1, 10, 100, 1000):
            print("fingerprint hits", _stats, flush=True)
        return hit.clone()
    _stats["miss"] += 1
    out = None
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    if len(_cache) < 200_000:
        _cache[k] = (x.clone(), weight.clone(), out.clone())
    return out
