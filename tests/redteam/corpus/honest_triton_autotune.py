# ruff: noqa
# mypy: ignore-errors
"""Honest: a Triton kernel autotuned over two block sizes (keyed by the element count).

Triton's default benchmarker needs a GPU driver, which the interpreter on a CPU does not
have; the autotuner is given one that uses Triton's own on a GPU and a wall clock
otherwise (what a kernel meant to run in both places would do).
"""
import time

import torch
import triton
import triton.language as tl


def _bench(fn, quantiles):
    if torch.cuda.is_available():
        return triton.testing.do_bench(fn, quantiles=quantiles)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return [times[1], times[0], times[2]]


@triton.autotune(
    configs=[triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 1024}, num_warps=4)],
    key=["n"],
    do_bench=_bench,
)
@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + 1.0, mask=mask)


def scale(x):
    y = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
    return y
