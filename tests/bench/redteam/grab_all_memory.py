# GPU; expect: RUNTIME_ERROR (out of memory); the runner is replaced and the next request succeeds
import torch

_hoard = []


def run(x, weight, eps):
    while True:
        _hoard.append(torch.empty(1 << 30, dtype=torch.uint8, device=x.device))
