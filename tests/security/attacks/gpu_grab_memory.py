# GPU; expect: RUNTIME_ERROR (out of memory): asks for more than the runner's GPU memory fraction
import torch


def run(x, weight, eps):
    free, total = torch.cuda.mem_get_info()
    junk = torch.empty(int(total * 0.97), dtype=torch.uint8, device=x.device)
    return junk
