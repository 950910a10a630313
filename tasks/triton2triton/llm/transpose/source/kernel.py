"""Materialized 2-D transpose: a correct but naive flat, uncoalesced Triton kernel."""

import torch
import triton
import triton.language as tl

BLOCK_SIZE = 256
NUM_WARPS = 4


@triton.jit
def transpose_kernel(x_ptr, y_ptr, M, N, stride_xm, stride_xn, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < M * N
    # Output (N, M) in flat order: consecutive lanes read x down a column.
    j = idx // M
    i = idx % M
    v = tl.load(x_ptr + i * stride_xm + j * stride_xn, mask=mask)
    tl.store(y_ptr + idx, v, mask=mask)


def transpose(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    y = torch.empty((n, m), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(m * n, BLOCK_SIZE),)
    transpose_kernel[grid](
        x, y, m, n, x.stride(0), x.stride(1), BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS
    )
    return y
