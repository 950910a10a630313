"""Rotary position embedding (NeoX layout): a naive one-(token, head)-per-program kernel."""

import torch
import triton
import triton.language as tl

BLOCK_SIZE = 16
NUM_WARPS = 4


@triton.jit
def rotary_kernel(
    x_ptr,
    cos_ptr,
    sin_ptr,
    y_ptr,
    n_heads,
    half,
    stride_xt,
    stride_xh,
    stride_yt,
    stride_yh,
    stride_c,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    tok = pid // n_heads
    head = pid % n_heads
    x_base = x_ptr + tok * stride_xt + head * stride_xh
    y_base = y_ptr + tok * stride_yt + head * stride_yh
    for start in range(0, half, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < half
        c = tl.load(cos_ptr + tok * stride_c + offs, mask=mask, other=0.0)
        s = tl.load(sin_ptr + tok * stride_c + offs, mask=mask, other=0.0)
        x1 = tl.load(x_base + offs, mask=mask, other=0.0).to(tl.float32)
        x2 = tl.load(x_base + half + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_base + offs, (x1 * c - x2 * s).to(y_ptr.dtype.element_ty), mask=mask)
        tl.store(y_base + half + offs, (x2 * c + x1 * s).to(y_ptr.dtype.element_ty), mask=mask)


def rotary_embedding(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    cos = cos.contiguous()
    sin = sin.contiguous()
    t, h, d = x.shape
    y = torch.empty_like(x)
    rotary_kernel[(t * h,)](
        x,
        cos,
        sin,
        y,
        h,
        d // 2,
        x.stride(0),
        x.stride(1),
        y.stride(0),
        y.stride(1),
        cos.stride(0),
        BLOCK=BLOCK_SIZE,
        num_warps=NUM_WARPS,
    )
    return y
