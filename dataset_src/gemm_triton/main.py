"""C = A @ B.T in Triton (A: [M, K], B: [N, K], C: [M, N], fp16), destination-passing style.

A classic tiled matmul: each program owns a BLOCK_M x BLOCK_N tile of C, walks K in BLOCK_K
steps, multiplies an A tile by the transposed B tile with tl.dot (tensor cores; fp32
accumulator) and stores fp16. Programs are launched in groups of GROUP_M tile-rows so that tiles
sharing B columns run together and re-use them from L2. No autotuning: the tile shape is picked
from M with a small table of configurations that suit an H100 (N = K = 4096):

  * small M (decode-like, B traffic dominates): narrow N tiles so that enough programs
    (about one per SM) stream B in parallel, deep K tiles, 4 warps;
  * large M (compute-bound): 128 x 128 x 64 tiles (or 128 x 256 for the largest M),
    8 warps (two warp groups), 3-4 pipeline stages.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _gemm_nt_kernel(A, B, C, M, N, K: tl.constexpr,
                    stride_am, stride_ak, stride_bn, stride_bk, stride_cm, stride_cn,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr):
    # K is a compile-time constant (4096 for this definition): the K loop has a static trip
    # count and, when BLOCK_K divides K, no masks
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # grouped ordering: GROUP_M tile-rows are visited column by column
    pids_per_group = GROUP_M * num_pid_n
    group_id = pid // pids_per_group
    first_pid_m = group_id * GROUP_M
    group_rows = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % pids_per_group) % group_rows
    pid_n = (pid % pids_per_group) // group_rows

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # rows past M / N are clamped (wrapped) instead of masked so the loads stay unpredicated;
    # their results are never stored
    rows_a = offs_m % M
    cols_b = offs_n % N
    a_ptrs = A + rows_a[:, None] * stride_am + offs_k[None, :] * stride_ak
    # B is [N, K]; read a [BLOCK_K, BLOCK_N] tile of B.T
    b_ptrs = B + cols_b[None, :] * stride_bn + offs_k[:, None] * stride_bk

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        if K % BLOCK_K == 0:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - k0
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c = acc.to(C.dtype.element_ty)
    c_ptrs = C + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


# (max M, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
_CONFIGS = (
    (16, 16, 32, 256, 1, 4, 4),
    (32, 32, 32, 256, 1, 4, 4),
    (128, 64, 64, 128, 8, 4, 4),
    (1024, 128, 128, 64, 8, 8, 4),
    (None, 128, 256, 64, 8, 8, 3),
)


def _config(m: int):
    for max_m, *cfg in _CONFIGS:
        if max_m is None or m <= max_m:
            return cfg
    raise AssertionError("unreachable")


def run(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor) -> None:
    M, K = A.shape
    N, K_b = B.shape
    assert K == K_b and C.shape == (M, N)
    if M == 0:
        return
    block_m, block_n, block_k, group_m, num_warps, num_stages = _config(M)
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
    _gemm_nt_kernel[grid](
        A, B, C, M, N, K,
        A.stride(0), A.stride(1), B.stride(0), B.stride(1), C.stride(0), C.stride(1),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=group_m,
        num_warps=num_warps, num_stages=num_stages,
    )
