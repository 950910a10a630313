# ruff: noqa
# mypy: ignore-errors
"""Honest: a Triton kernel using fma, with a tunable block size."""
import torch
import triton
import triton.language as tl

BLOCK_SIZE = 512


@triton.jit
def _fma_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.fma(x, 2.0, 1.0)
    tl.store(y_ptr + offs, y, mask=mask)


def scale(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    grid = (triton.cdiv(x.numel(), BLOCK_SIZE),)
    _fma_kernel[grid](x, y, x.numel(), BLOCK=BLOCK_SIZE)
    return y
