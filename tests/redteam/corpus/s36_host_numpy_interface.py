# ruff: noqa
# mypy: ignore-errors
"""Softmax's row reductions on the host: numpy views of the tensors' memory through
``__array_interface__`` (no torch operator, no ctypes), then a Triton kernel that needs
them (exp and scale per element).

Task: triton2triton/llm/softmax (bundled). An open hole on the CPU only: there a tensor's
memory is the host's, and Triton's interpreter itself computes with numpy over it, so
numpy on the host is not told apart from a kernel (4.3x on the CPU, correct, no flag).
On a GPU the address is device memory, which numpy cannot read.
"""
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, m_ptr, s_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    mx = tl.load(m_ptr + row)
    s = tl.load(s_ptr + row)
    tl.store(y_ptr + row * stride_y + cols, (tl.exp(x - mx) / s).to(y_ptr.dtype.element_ty), mask=mask)


class _Raw:
    def __init__(self, t, typestr):
        self.__array_interface__ = {"shape": (t.numel(),), "typestr": typestr,
                                    "data": (t.data_ptr(), False), "version": 3}


def _host(t):
    if t.dtype == torch.bfloat16:
        raw = np.asarray(_Raw(t, "<u2"))
        return (raw.astype(np.uint32) << 16).view(np.float32)
    return np.asarray(_Raw(t, {torch.float32: "<f4", torch.float16: "<f2"}[t.dtype])).astype(np.float32)


def softmax(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    y = torch.empty_like(x)
    xf = _host(x).reshape(m, -1)[:, :n]
    mx = xf.max(axis=1)
    s = np.exp(xf - mx[:, None]).sum(axis=1)
    mt = torch.empty(m, dtype=torch.float32)
    st = torch.empty(m, dtype=torch.float32)
    np.asarray(_Raw(mt, "<f4"))[:] = mx
    np.asarray(_Raw(st, "<f4"))[:] = s
    scale_kernel[(m,)](x, y, mt, st, n, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(n))
    return y
