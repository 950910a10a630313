# ruff: noqa
# mypy: ignore-errors
"""Honest: in-place ops on a new tensor (inputs untouched)."""
import torch


def scale(x):
    return torch.add(x, x).add_(1)
