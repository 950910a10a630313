# ruff: noqa
# mypy: ignore-errors
"""Pattern 8: a null answer (zeros) on a task that resists it."""
import torch


def scale(x):
    return torch.zeros_like(x)
