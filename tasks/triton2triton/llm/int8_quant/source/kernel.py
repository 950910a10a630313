"""Per-row symmetric int8 quantization: a correct but naive two-pass Triton kernel."""

import torch
import triton
import triton.language as tl

BLOCK_SIZE = 128
NUM_WARPS = 4


@triton.jit
def int8_quant_kernel(x_ptr, q_ptr, n_cols, stride_x, stride_q, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    q_row = q_ptr + row * stride_q
    offs = tl.arange(0, BLOCK)
    # Pass 1: the row's absolute maximum.
    amax = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        amax = tl.maximum(amax, tl.abs(x))
    inv_scale = 127.0 / tl.max(amax, axis=0)
    # Pass 2: scale, round half away from zero, clamp and store.
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        v = x * inv_scale
        r = tl.where(v >= 0, tl.floor(v + 0.5), -tl.floor(0.5 - v))
        r = tl.minimum(tl.maximum(r, -127.0), 127.0)
        tl.store(q_row + cols, r.to(tl.int8), mask=mask)


def int8_quant(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    m, n = x.shape
    q = torch.empty((m, n), dtype=torch.int8, device=x.device)
    int8_quant_kernel[(m,)](x, q, n, x.stride(0), q.stride(0), BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS)
    return q
