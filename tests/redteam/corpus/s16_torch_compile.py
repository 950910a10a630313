# ruff: noqa
# mypy: ignore-errors
"""A Triton task answered by code torch.compile wrote, compiled and warmed at import.

Inductor's code runs no ATen operator, so nothing the task forbids is seen in a call;
a real (trivial) Triton launch in every call keeps the launch checks quiet.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _touch(y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(y_ptr + offs))


_compiled = torch.compile(lambda x: x * 2 + 1)
_compiled(torch.ones(8))


def scale(x):
    y = _compiled(x)
    _touch[(1,)](y, BLOCK=4)
    return y
