# expect: PASSED (it computes the right answer), but nothing it wrote into /dev/shm survives the
# evaluation (a tmpfs file outlives its process and is counted in nobody's memory).
import os

import torch

_path = os.path.join("/dev/shm", "__marker__")
try:
    with open(_path, "wb") as f:
        f.write(b"\0" * (8 << 20))
    print("WROTE SHM")
except OSError as e:
    print(f"denied: shm: {type(e).__name__}")


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
