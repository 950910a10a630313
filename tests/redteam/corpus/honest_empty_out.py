# ruff: noqa
# mypy: ignore-errors
"""Honest: torch.empty_like fully written through out= (no uninitialized read)."""
import torch


def scale(x):
    out = torch.empty_like(x)
    torch.mul(x, 2, out=out)
    out.add_(1)
    return out
