# ruff: noqa
# mypy: ignore-errors
"""Honest: a Triton kernel with tl.where and a 2-program minimum grid."""
import torch
import triton
import triton.language as tl


@triton.jit
def _where_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.where(x >= 0, x + x + 1, 2 * x + 1)
    tl.store(y_ptr + offs, y, mask=mask)


def scale(x):
    y = torch.zeros_like(x)
    _where_kernel[(max(2, triton.cdiv(x.numel(), 2048)),)](x, y, x.numel(), BLOCK=2048)
    return y
