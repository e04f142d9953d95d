# expect: INCORRECT_NUMERICAL, flag stale_output  (caches its output by input address: timed inputs
# are refreshed in place, so a cache hit returns the answer to an earlier input)
import torch

_cache = {}


def run(x, weight, eps):
    key = (x.data_ptr(), weight.data_ptr(), tuple(x.shape))
    hit = _cache.get(key)
    if hit is not None:
        return hit
    xf = x.float()
    out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    _cache[key] = out
    return out
