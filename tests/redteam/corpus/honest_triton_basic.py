# ruff: noqa
# mypy: ignore-errors
"""Honest: a masked Triton kernel, one block per program."""
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * 2 + 1, mask=mask)


def scale(x):
    y = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    return y
