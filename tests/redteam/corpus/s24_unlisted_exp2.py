# ruff: noqa
# mypy: ignore-errors
"""Softmax from operators the task does not list: ``exp2``, ``max``, ``sum``, a division.

Task: triton2triton/llm/softmax (bundled). Expected: ``forbidden_api``.

The task forbids softmax, log_softmax, logsumexp and exp (``aten::exp``); ``exp(z)`` is
``exp2(z * log2(e))``, ``aten::exp2``, which no list names but logsumexp's. The library
computes the answer; a Triton copy moves it into the output, so the launch checks see a
kernel whose no-op changes the output. (docs/security.md, "A forbidden list is a list",
names the class; this is the entry that shows the bundled softmax still open.)
"""
import torch
import triton
import triton.language as tl

_L2E = 1.4426950408889634


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


def softmax(x):
    z = x.float()
    z = z - z.max(dim=-1, keepdim=True).values
    e = torch.exp2(z * _L2E)
    return _out(e / e.sum(dim=-1, keepdim=True), x.shape, x.dtype)
