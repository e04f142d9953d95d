# expect: flagged torch_patched (suspect). Replaces a torch function that the reference of later
# evaluations may call; its own answer is right.
import torch
import torch.nn.functional as F

_real = F.rms_norm
F.rms_norm = lambda *a, **k: _real(*a, **k)


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
