# expect: PASSED but no faster than the reference (speedup about 1; flag no_faster_than_reference
# when the measured speedup is <= 1.05): it runs the definition's own reference code
import torch


def run(x, weight, eps):
    xf = x.to(torch.float32)
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (xf * rstd * weight.to(torch.float32)).to(torch.float16)
