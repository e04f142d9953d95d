"""RMSNorm in TileLang (tilelang >= 0.1.15), value-returning.

One thread block (256 threads) per row; the batch size is a dynamic symbol, so a single compiled
kernel serves every batch. The row is copied from global memory into a register fragment
(TileLang lowers the copy to 16-byte vector loads, 16 halves per thread for 4096 columns),
converted to fp32, squared and reduced across the block with T.reduce_sum, scaled by
rsqrt(mean + eps) and the weight, and stored back as fp16. eps is a float32 kernel argument.

The kernel is compiled on first use for the GPU that is present (target "auto") and cached per
(hidden size, device).
"""
import torch
import tilelang
import tilelang.language as T

THREADS = 256


def rmsnorm_program(hidden: int, threads: int = THREADS):
    """The TileLang program for rows of `hidden` fp16 values (batch is dynamic)."""
    batch = T.dynamic("batch")

    @T.prim_func
    def rmsnorm(
        X: T.Tensor((batch, hidden), T.float16),
        W: T.Tensor((hidden,), T.float16),
        eps: T.float32,
        Y: T.Tensor((batch, hidden), T.float16),
    ):
        with T.Kernel(batch, threads=threads) as row:
            x_half = T.alloc_fragment((1, hidden), T.float16)
            w_half = T.alloc_fragment((1, hidden), T.float16)
            x_f32 = T.alloc_fragment((1, hidden), T.float32)
            x_sq = T.alloc_fragment((1, hidden), T.float32)
            sum_sq = T.alloc_fragment((1,), T.float32)

            T.copy(X[row:row + 1, :], x_half)
            for i, j in T.Parallel(1, hidden):
                w_half[i, j] = W[j]
            for i, j in T.Parallel(1, hidden):
                x_f32[i, j] = T.cast(x_half[i, j], T.float32)
                x_sq[i, j] = x_f32[i, j] * x_f32[i, j]
            T.reduce_sum(x_sq, sum_sq, dim=1)
            for i in T.Parallel(1):
                sum_sq[i] = T.rsqrt(sum_sq[i] / hidden + eps)  # now holds rstd
            for i, j in T.Parallel(1, hidden):
                x_half[i, j] = T.cast(x_f32[i, j] * sum_sq[i] * T.cast(w_half[i, j], T.float32),
                                      T.float16)
            T.copy(x_half, Y[row:row + 1, :])

    return rmsnorm


def build(hidden: int, target="auto"):
    """Compile the kernel; target "auto" picks the visible GPU (a dict such as
    {"kind": "cuda", "arch": "sm_90"} compiles for a given architecture without one)."""
    return tilelang.compile(rmsnorm_program(hidden), target=target)


_kernels = {}


def run(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    n_rows, hidden = x.shape
    out = torch.empty_like(x)
    if n_rows == 0:
        return out
    key = (hidden, x.device.index)
    kernel = _kernels.get(key)
    if kernel is None:
        with torch.cuda.device(x.device):
            kernel = _kernels[key] = build(hidden)
    kernel(x.contiguous(), weight.contiguous(), float(eps), out)
    return out
