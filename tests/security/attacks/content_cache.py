"""Class: predictable inputs (a content cache across evaluations).

Tries: remember every answer by a fingerprint of the inputs' bytes, for as long as the runner
lives; compute a miss the slow way (the honest computation plus 2 ms). If a later evaluation of
the same workload in this runner times the same inputs again, every timed call is a hit and the
latency collapses. Expect: the second evaluation's latency is not far below the first's.
"""
import hashlib
import time

import torch

_cache = {}


def _key(*ts):
    h = hashlib.blake2b(digest_size=16)
    for t in ts:
        h.update(t.contiguous().view(torch.uint8).numpy().tobytes())
    return h.digest()


def run(x, weight, eps):
    k = _key(x, weight)
    hit = _cache.get(k)
    if hit is not None:
        return hit.clone()
    time.sleep(0.002)
    xf = x.float()
    out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    _cache[k] = out.clone()
    return out
