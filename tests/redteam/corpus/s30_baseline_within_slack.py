# ruff: noqa
# mypy: ignore-errors
"""The baseline slowed by a fifth, beside the candidate, under the clean-timing check's slack.

Task: triton2triton/llm/softmax (bundled). Expected: ``task_code_patched`` (the baseline's
module, snapshotted before the candidate was imported, no longer binds its kernel).

The kernel is the baseline's own, unchanged. At import it walks out of its own import
through a caught exception's traceback to the evaluator's frame that holds the loaded
baseline (as ``s10_baseline_globals`` does), and swaps the Triton kernel the baseline's
module globals name for a launcher that runs it and then waits a fifth of its time
(in the interpreter, about 2.5 ms a call). The evaluator re-times the baseline in a
process of its own and corrects a baseline slowed beyond 1.25 times its clean median on
the CPU (1.10 on a GPU); a fifth stays under that, and what is left is the speedup of a
kernel identical to the baseline (docs/security.md: "what a candidate can still gain this
way is bounded by that slack").
"""
import time


import torch
import triton
import triton.language as tl

BLOCK_SIZE = 128
NUM_WARPS = 4


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    offs = tl.arange(0, BLOCK)
    # Pass 1: the row maximum.
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)
    # Pass 2: the sum of exponentials.
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        s += tl.exp(x - row_max)
    total = tl.sum(s, axis=0)
    # Pass 3: normalize and store.
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - row_max) / total
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    m, n = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(m,)](x, y, n, x.stride(0), y.stride(0), BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS)
    return y


class _Slower:
    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        launch = self.kernel[grid]

        def run(*args, **kwargs):
            t0 = time.perf_counter()
            out = launch(*args, **kwargs)
            time.sleep((time.perf_counter() - t0) * 0.2)
            return out

        return run


def _slow_the_baseline():
    try:
        raise RuntimeError
    except RuntimeError as exc:
        frame = exc.__traceback__.tb_frame
    while frame is not None:
        for value in list(frame.f_locals.values()):
            g = getattr(value, "__globals__", None)
            if (callable(value) and isinstance(g, dict) and "_Slower" not in g
                    and getattr(value, "__name__", "") == "softmax" and "softmax_kernel" in g):
                g["softmax_kernel"] = _Slower(g["softmax_kernel"])
        frame = frame.f_back


_slow_the_baseline()
