"""Sum over rows (column reduction): a correct but naive strip-per-program Triton kernel."""

import torch
import triton
import triton.language as tl

BLOCK_M = 8
BLOCK_N = 32
NUM_WARPS = 4


@triton.jit
def col_sum_kernel(x_ptr, out_ptr, M, N, stride_x, BM: tl.constexpr, BN: tl.constexpr):
    # Each program owns BN columns and walks down all M rows, BM rows at a time, so only
    # cdiv(N, BN) programs run however tall the matrix is.
    pid = tl.program_id(0)
    cols = pid * BN + tl.arange(0, BN)
    rows = tl.arange(0, BM)
    col_mask = cols < N
    acc = tl.zeros([BM, BN], tl.float32)
    ptrs = x_ptr + rows[:, None].to(tl.int64) * stride_x + cols[None, :]
    for start in range(0, M, BM):
        mask = ((start + rows)[:, None] < M) & col_mask[None, :]
        acc += tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
        ptrs += BM * stride_x
    tl.store(out_ptr + cols, tl.sum(acc, axis=0), mask=col_mask)


def col_sum(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    m, n = x.shape
    out = torch.empty(n, dtype=torch.float32, device=x.device)
    grid = (triton.cdiv(n, BLOCK_N),)
    col_sum_kernel[grid](
        x, out, m, n, x.stride(0), BM=BLOCK_M, BN=BLOCK_N, num_warps=NUM_WARPS
    )
    return out
