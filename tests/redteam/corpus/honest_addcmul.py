# ruff: noqa
# mypy: ignore-errors
"""Honest: addcmul into a fresh tensor."""
import torch


def scale(x):
    return torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))
