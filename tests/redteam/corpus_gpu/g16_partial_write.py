# ruff: noqa
# mypy: ignore-errors
"""Pattern 16: half the output is never written (uninitialized device memory)."""

import torch


def scale(x):
    out = torch.empty_like(x)
    half = x.numel() // 2
    out[:half] = x[:half] * 2 + 1
    return out
