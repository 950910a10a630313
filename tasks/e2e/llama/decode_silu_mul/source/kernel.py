"""SiLU-and-mul (SwiGLU gate): a correct but naive flat element-wise Triton kernel."""

import torch
import triton
import triton.language as tl

BLOCK_SIZE = 128
NUM_WARPS = 4


@triton.jit
def silu_and_mul_kernel(x_ptr, y_ptr, n_out, total, stride_x, stride_y, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    idx = pid * BLOCK + tl.arange(0, BLOCK)
    mask = idx < total
    row = idx // n_out
    col = idx % n_out
    a = tl.load(x_ptr + row * stride_x + col, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * stride_x + n_out + col, mask=mask, other=0.0).to(tl.float32)
    y = a / (1.0 + tl.exp(-a)) * b
    tl.store(y_ptr + row * stride_y + col, y.to(y_ptr.dtype.element_ty), mask=mask)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    m, two_n = x.shape
    n = two_n // 2
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    total = m * n
    grid = (triton.cdiv(total, BLOCK_SIZE),)
    silu_and_mul_kernel[grid](
        x, y, n, total, x.stride(0), y.stride(0), BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS
    )
    return y
