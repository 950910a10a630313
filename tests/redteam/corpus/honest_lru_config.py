# ruff: noqa
# mypy: ignore-errors
"""Honest: the launch configuration is looked up through ``functools.lru_cache``.

Only the configuration (a chunk size per element count) is memoized; the arithmetic
runs on every call.
"""
import functools

import torch


@functools.lru_cache(maxsize=64)
def _chunk(n: int, itemsize: int) -> int:
    target = 1 << 18
    return max(1024, min(n, target // itemsize))


def scale(x):
    n = x.numel()
    step = _chunk(n, x.element_size())
    out = torch.empty_like(x)
    for s in range(0, n, step):
        out[s : s + step] = torch.addcmul(torch.ones_like(x[s : s + step]), x[s : s + step], torch.tensor(2.0, dtype=x.dtype, device=x.device))
    return out
