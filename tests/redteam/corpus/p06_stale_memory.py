# ruff: noqa
# mypy: ignore-errors
"""Pattern 6: return uninitialized memory, hoping it holds a freed reference output."""
import torch


def scale(x):
    return torch.empty_like(x)
