# ruff: noqa
# mypy: ignore-errors
"""Pattern 12: launches a Triton kernel, then returns a torch result."""
import torch
import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def scale(x):
    y = torch.empty_like(x)
    _k[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return x * 2 + 1
