"""Residual add + RMSNorm: a correct but naive two-pass Triton kernel."""

import torch
import triton
import triton.language as tl

BLOCK_SIZE = 128
NUM_WARPS = 4
EPS = 1e-6


@triton.jit
def fused_add_rms_norm_kernel(
    x_ptr, r_ptr, w_ptr, y_ptr, n_cols, stride_x, stride_r, stride_y, eps, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    # Pass 1: the mean of squares of x + residual.
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
        h = x + r
        acc += h * h
    inv_rms = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    # Pass 2: add again, scale and store.
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x + r) * inv_rms * w
        tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def fused_add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor
) -> torch.Tensor:
    x = x.contiguous()
    residual = residual.contiguous()
    m, n = x.shape
    y = torch.empty_like(x)
    fused_add_rms_norm_kernel[(m,)](
        x,
        residual,
        weight.contiguous(),
        y,
        n,
        x.stride(0),
        residual.stride(0),
        y.stride(0),
        EPS,
        BLOCK=BLOCK_SIZE,
        num_warps=NUM_WARPS,
    )
    return y
