# ruff: noqa
# mypy: ignore-errors
"""A softmax "kernel" that only Triton's interpreter runs: the row's maximum and sum are
read on the host, from the block's numpy data, in the kernel's body.

Task: triton2triton/llm/softmax (bundled). Expected: ``gpu_compile``.

On the CPU aka runs Triton kernels through the interpreter, which executes a kernel's
body as Python over numpy arrays: ``x.handle.data`` is the loaded block, and ``np.max``
of it is a host float that the rest of the body uses like a reduction's result. One
program per row, one load, no loop: right, and faster than the baseline's three passes
under the interpreter. No GPU can run it: Triton's compiler refuses a call to numpy.
"""
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=float("-inf")).to(tl.float32)
    e = tl.exp(x - float(np.max(x.handle.data)))
    total = float(np.sum(e.handle.data))
    tl.store(y_ptr + row * stride_y + cols, (e / total).to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(m,)](x, y, n, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(n))
    return y
