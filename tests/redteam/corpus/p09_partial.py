# ruff: noqa
# mypy: ignore-errors
"""Pattern 9: compute half the output, fill the rest with the mean of the outputs."""
import torch


def scale(x):
    out = torch.full_like(x, 3.0)
    half = x.numel() // 2
    out[:half] = x[:half] * 2 + 1
    return out
