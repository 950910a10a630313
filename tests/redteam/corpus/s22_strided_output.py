# ruff: noqa
# mypy: ignore-errors
"""A transpose that moves no element to its place: a flat copy returned through a
transposed view, so the evaluator's own save does the transposition.

Task: triton2triton/llm/transpose (bundled). Expected: ``output_layout`` (an output
whose layout is not the contract's; correct with no flag before that check).

The task asks for a new contiguous (N, M) tensor. The core requires an output that is a
plain strided tensor in memory of its own (not an input's), and saves it by copying its
logical elements into a contiguous file: any layout is accepted and materialized there,
after the call and outside every timed window. So the kernel copies ``x`` in flat order
(fully coalesced on both sides, the cheapest kernel there is) into a new buffer and
returns it viewed as its transpose (``as_strided``: neither a copy nor a forbidden name).
Every element reads right; the timed kernel is a memcpy.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _flat_copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


def transpose(x):
    m, n = x.shape
    buf = torch.empty((m, n), dtype=x.dtype, device=x.device)
    total = m * n
    _flat_copy[(triton.cdiv(total, 4096),)](x, buf, total, BLOCK=4096)
    return buf.as_strided((n, m), (1, n))
