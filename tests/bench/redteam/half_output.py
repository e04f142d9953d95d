# DPS; expect: INCORRECT_NUMERICAL  (writes only the first half of the rows; the rest stay NaN-poisoned)
import torch


def run(x, weight, eps, out):
    n = x.shape[0] // 2 or 1
    xf = x[:n].float()
    out[:n] = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
