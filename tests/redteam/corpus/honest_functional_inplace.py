# ruff: noqa
# mypy: ignore-errors
"""Honest: functional ops with ``out=`` and in-place ops, only on its own allocations."""
import torch


def scale(x):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    torch.mul(x, 2.0, out=out)
    out.add_(1.0)
    return out
