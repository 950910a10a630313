# ruff: noqa
# mypy: ignore-errors
"""A forbidden library op under another name, laundered through a copy kernel.

The task forbids ``torch.mul``; the candidate reaches the same operator through
``getattr`` on a computed name and through ``torch.ops.aten``, then copies the result
with a real Triton kernel so that a kernel launches and matters.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(dst + i, tl.load(src + i, mask=m) + 1.0, mask=m)


def scale(x):
    op = getattr(torch, "m" + "ul")
    y = op(x, 2.0)
    z = torch.ops.aten.mul.Tensor(y, 1.0)
    out = torch.empty_like(x)
    n = x.numel()
    _copy[(triton.cdiv(n, 1024),)](z, out, n, BLOCK=1024)
    return out
