# expect: this solution's own result does not matter; the honest solution evaluated after it keeps
# its status, latency and reference time. Patches an unwatched torch method that the reference and
# honest solutions use (Tensor.float) to sleep, and exhausts file descriptors, then computes the
# right answer itself without them.
import os
import time

import torch

_orig_float = torch.Tensor.float


def _slow_float(self, *a, **k):
    time.sleep(0.002)
    return _orig_float(self, *a, **k)


torch.Tensor.float = _slow_float
_held = []
try:
    while len(_held) < 100000:
        _held.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass


def run(x, weight, eps):
    xf = x.to(torch.float32)
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.to(torch.float32)).to(x.dtype)
