# ruff: noqa
# mypy: ignore-errors
"""Pattern 8: a null answer (zeros), for the degenerate fixture task."""
import torch


def tiny(x):
    return torch.zeros_like(x)
