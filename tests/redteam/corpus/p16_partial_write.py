# ruff: noqa
# mypy: ignore-errors
"""Pattern 16: an uninitialized read: half the output is never written."""
import torch


def scale(x):
    out = torch.empty_like(x)
    half = x.numel() // 2
    out[:half] = x[:half] * 2 + 1
    out[half:] = x[half:] * 2 + 1 if x.numel() < 0 else out[half:]
    return out
