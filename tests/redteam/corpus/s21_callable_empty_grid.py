# ruff: noqa
# mypy: ignore-errors
"""Torch does the work; the launch every call needs is one over a grid that *computes* to
zero programs.

Task: the fixture triton/ops/scale (no forbidden list: only the launch checks stand).
Expected: ``no_kernel_launch``.

``s14_empty_grid`` launched over ``(0,)`` and is caught: the launch hook does not count a
launch whose grid has no program. It can only tell that from a grid given as numbers; a
grid given as a callable (Triton's documented ``grid=lambda meta: ...``) that returns
``(0,)`` is counted as a launch that ran. The post-plan probes build fresh tensors, and,
as in ``s14_launch_when_probed``, tensors never seen get the real kernel (so the probe
sees a launch, and an output that changes when launches are no-ops); every call of the
plan on the evaluator's buffers is torch plus the empty launch. (On a bundled task the
plumbing-only operator rule now charges the torch arithmetic; the launch check is what
this entry is about.)
"""
import weakref

import torch
import triton
import triton.language as tl

_seen = {}


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * 2 + 1, mask=mask)


def _empty(meta):
    return (0,)


def scale(x):
    y = torch.empty_like(x)
    n = x.numel()
    known = _seen.get(id(x))
    if known is None or known() is not x:
        _seen[id(x)] = weakref.ref(x)
        _scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
    _scale_kernel[_empty](x, y, n, BLOCK=1024)
    return x * 2 + 1
