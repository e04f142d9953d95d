# GPU; expect: flagged background_work. Correct outputs, but a thread keeps launching kernels on a
# side stream after every call has returned.
import threading
import time

import torch

_t = []


def _launch(device):
    s = torch.cuda.Stream(device=device)
    a = torch.randn(1024, 1024, device=device)
    end = time.monotonic() + 30
    with torch.cuda.stream(s):
        while time.monotonic() < end:
            a = (a @ a).clamp_(-1, 1)
            s.synchronize()


def run(x, weight, eps):
    if not _t:
        _t.append(threading.Thread(target=_launch, args=(x.device,), daemon=True, name="gpu-keeps-working"))
        _t[0].start()
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
