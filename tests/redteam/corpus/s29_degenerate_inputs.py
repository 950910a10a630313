# ruff: noqa
# mypy: ignore-errors
"""The inputs the harness draws, made constant by replacing torch's random functions.

Task: triton2triton/llm/softmax (bundled). Expected: caught by the checker (wrong cases).

``torch.randn`` and ``torch.rand`` are swapped in the torch module's dict at import, so
the task's ``make_inputs`` (which looks them up at every call) draws zeros in this
process: every row is then constant and its softmax is ``1/N``, written by a trivial
kernel. The checker, in a process of its own, draws the real inputs from the seed and
computes the reference there, so every answer is wrong; kept as a regression test of
that boundary (s18_inputs_hook_patch uses the same door to read the inputs instead).
"""
import torch
import triton
import triton.language as tl


def _zeros(*size, generator=None, **kwargs):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return torch.zeros(*size, **kwargs)


torch.__dict__["randn"] = _zeros
torch.__dict__["rand"] = _zeros


@triton.jit
def _fill(y_ptr, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros([BLOCK], tl.float32) + value, mask=offs < n)


def softmax(x):
    y = torch.empty_like(x)
    n = x.numel()
    _fill[(triton.cdiv(n, 4096),)](y, n, 1.0 / x.shape[1], BLOCK=4096)
    return y
