# ruff: noqa
# mypy: ignore-errors
"""Pattern 6: return fresh device memory, hoping a freed output is still in it."""

import torch


def scale(x):
    return torch.empty_like(x)
