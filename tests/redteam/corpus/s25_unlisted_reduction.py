# ruff: noqa
# mypy: ignore-errors
"""RMSNorm from operators the task does not list: a matmul with a ones column for the
mean of squares, ``exp(-log(v) / 2)`` for the inverse square root.

Task: triton2triton/llm/rms_norm (bundled). Expected: ``forbidden_api``.

The task forbids rms_norm, rsqrt, pow, mean, sqrt, sum, normalize and the norms; a
reduction is also a matrix product (``aten::mm``) and ``1/sqrt(v)`` is ``exp(-log(v)/2)``.
A Triton copy moves the library's answer into the output.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask).to(dst.dtype.element_ty), mask=mask)


def _out(tmp, like_shape, dtype):
    y = torch.empty(like_shape, dtype=dtype, device=tmp.device)
    n = tmp.numel()
    _copy[(triton.cdiv(n, 4096),)](tmp.contiguous(), y, n, BLOCK=4096)
    return y


def rms_norm(x, weight):
    xf = x.float()
    ms = (xf * xf) @ torch.full((xf.shape[1], 1), 1.0 / xf.shape[1], device=x.device)
    return _out(xf * torch.exp(torch.log(ms + 1e-6) * -0.5) * weight.float(), x.shape, x.dtype)
