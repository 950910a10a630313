# ruff: noqa
# mypy: ignore-errors
"""A Triton "launch" that runs nothing, in every call; torch does the work.

``_scale_kernel.run(None, grid=(1,), warmup=False)`` raises inside Triton, and a launch
hook that counted the call before running it counted a launch. Under the no-op probe the
hook returns instead of raising, so the candidate knows it is probed and answers with
empty memory there (an output that changes when launches are no-ops).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2 + 1, mask=mask)


def scale(x):
    try:
        _scale_kernel.run(None, grid=(1,), warmup=False)
        probed = True
    except Exception:
        probed = False
    if probed:
        return torch.empty_like(x)
    return x * 2 + 1
