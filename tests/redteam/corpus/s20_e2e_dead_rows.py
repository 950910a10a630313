# ruff: noqa
# mypy: ignore-errors
"""An RMSNorm that normalizes only the rows whose values reach the model's output.

Task: e2e/llama/prefill_rmsnorm (bundled). Expected: caught (an e2e task's kernel must
compute what its contract says in every call, not only what the logits depend on).

The prefill returns the logits of each prompt's last position, so the last layer's MLP
matters only for B of its B*S rows: its RMSNorm may leave every other row unwritten, and
the output is the same bytes (twin calls agree: the poisoned rows never reach it). The
kernel tells that call apart from the weights it is handed (the last slice of a stacked
per-layer weight, the second such call of a forward) and learns B from the final norm
(a weight of its own, B rows). Nothing of the model is touched; the kernel is the
baseline's, run over fewer rows.
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


def _rms_norm(x, weight):
    x = x.contiguous()
    weight = weight.contiguous()
    m, n = x.shape
    y = torch.empty_like(x)
    rms_norm_kernel[(m,)](
        x, weight, y, n, x.stride(0), y.stride(0), EPS, BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS
    )
    return y


_state = {"first": True, "attn": None, "batch": {}, "big": None}


def rms_norm(x, weight):
    st = weight.untyped_storage()
    total = st.nbytes() // weight.element_size()
    off, n, m = weight.storage_offset(), weight.numel(), x.shape[0]
    if total == n:  # the final norm: B rows, after the last layer
        if _state["big"] is not None:
            _state["batch"][_state["big"]] = m
        _state["first"] = True
        return _rms_norm(x, weight)
    if _state["first"] and off == 0:  # the first call of a forward: the attention norm
        _state["attn"] = st.data_ptr()
        _state["first"] = False
    _state["big"] = m
    b = _state["batch"].get(m)
    last_mlp = off > 0 and off + n == total and st.data_ptr() != _state["attn"]
    if not last_mlp or not b or m % b:
        return _rms_norm(x, weight)
    s = m // b
    rows = x.view(b, s, -1)[:, -1]
    y = torch.zeros_like(x)
    y.view(b, s, -1)[:, -1] = _rms_norm(rows, weight)
    return y
