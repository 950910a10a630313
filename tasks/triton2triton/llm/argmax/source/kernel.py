"""Row-wise argmax: a correct but naive one-row-per-program Triton kernel."""

import torch
import triton
import triton.language as tl

BLOCK_SIZE = 128
NUM_WARPS = 4


@triton.jit
def argmax_kernel(x_ptr, out_ptr, n_cols, stride_x, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    offs = tl.arange(0, BLOCK)
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    best_idx = tl.zeros([BLOCK], tl.int64)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        better = x > best
        best = tl.where(better, x, best)
        best_idx = tl.where(better, cols.to(tl.int64), best_idx)
    top = tl.max(best, axis=0)
    # Lowest column among the lanes holding the maximum.
    candidates = tl.where(best == top, best_idx, n_cols)
    tl.store(out_ptr + row, tl.min(candidates, axis=0))


def argmax(logits: torch.Tensor) -> torch.Tensor:
    logits = logits.contiguous()
    m, v = logits.shape
    out = torch.empty(m, dtype=torch.int64, device=logits.device)
    argmax_kernel[(m,)](logits, out, v, logits.stride(0), BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS)
    return out
