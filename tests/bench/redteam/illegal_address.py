# GPU; expect: RUNTIME_ERROR (an illegal memory access poisons the CUDA context; the runner is
# replaced and the next request succeeds)
import torch
import triton
import triton.language as tl


@triton.jit
def _bad(X, N):
    i = tl.arange(0, 128)
    tl.store(X + i + (1 << 40), tl.zeros([128], dtype=tl.float16))


def run(x, weight, eps):
    _bad[(1,)](x, x.numel())
    torch.cuda.synchronize()
    return x
