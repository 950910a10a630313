# ruff: noqa
# mypy: ignore-errors
"""The model's RMSNorms by torch's ``sqrt`` and ``sum`` (the e2e task forbids neither), the
Triton kernel launched once per forward.

Task: e2e/llama/prefill_rmsnorm (bundled). Expected: ``forbidden_api``.

The e2e task forbids rms_norm, rsqrt, ``Tensor.pow`` and mean; the kernel-only
``triton2triton/llm/rms_norm`` also forbids sqrt, sum, normalize and the norms, which the
model task's list lacks. So ``x / sqrt(sum(x*x)/n + eps) * w`` is allowed here. And the
launch check counts calls of the plan, which are whole forwards: one launch per forward
suffices, so only the final norm (the one whose weight is a tensor of its own) runs the
Triton kernel; the other 2L norms are torch.
"""


import torch
import triton
import triton.language as tl

BLOCK_SIZE = 128
NUM_WARPS = 4
EPS = 1e-6


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_cols, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    offs = tl.arange(0, BLOCK)
    # Pass 1: the mean of squares.
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc += x * x
    inv_rms = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    # Pass 2: scale and store.
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (x * inv_rms * w).to(y_ptr.dtype.element_ty), mask=mask)


def _triton_rms_norm(x, weight):
    x = x.contiguous()
    weight = weight.contiguous()
    m, n = x.shape
    y = torch.empty_like(x)
    rms_norm_kernel[(m,)](
        x, weight, y, n, x.stride(0), y.stride(0), EPS, BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS
    )
    return y


def rms_norm(x, weight):
    if weight.untyped_storage().nbytes() == weight.numel() * weight.element_size():
        return _triton_rms_norm(x, weight)  # the final norm: the forward's one launch
    xf = x.float()
    ms = (xf * xf).sum(dim=-1, keepdim=True) / xf.shape[-1]
    return (xf / torch.sqrt(ms + EPS) * weight.float()).to(x.dtype)
