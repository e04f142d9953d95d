# expect: INCORRECT_NUMERICAL  (caches by a cheap fingerprint of the input: shape and the sign of its
# first element; fresh inputs collide on that fingerprint and get a stale answer)
import torch

_cache = {}


def run(x, weight, eps):
    key = (tuple(x.shape), bool(x.reshape(-1)[0] > 0))
    hit = _cache.get(key)
    if hit is not None:
        return hit
    xf = x.float()
    out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    _cache[key] = out
    return out
