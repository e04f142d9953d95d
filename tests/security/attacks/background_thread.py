# expect: flagged background_work. Returns correct outputs, but keeps a thread launching work after
# every call has returned (busy work that would steal time from whatever is measured next).
import threading
import time

import torch

_t = []


def _spin():
    a = torch.randn(64, 64)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        a = (a @ a).clamp_(-1, 1)


def run(x, weight, eps):
    if not _t:
        _t.append(threading.Thread(target=_spin, daemon=True, name="keeps-working"))
        _t[0].start()
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
