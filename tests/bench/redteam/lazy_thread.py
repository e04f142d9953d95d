# expect: INCORRECT_NUMERICAL  (returns an empty tensor at once and fills it from a background thread)
import threading
import time

import torch


def _fill(out, x, weight, eps):
    time.sleep(0.02)
    xf = x.float()
    out.copy_((xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half())


def run(x, weight, eps):
    out = torch.empty_like(x)
    threading.Thread(target=_fill, args=(out, x.clone(), weight.clone(), eps), daemon=True).start()
    return out
