# ruff: noqa
# mypy: ignore-errors
"""Honest: a module-level constant tensor (a constant, not a cache of answers)."""
import torch

_TWO = torch.tensor(2.0)


def scale(x):
    return torch.mul(x, _TWO.to(x.dtype)) + 1
