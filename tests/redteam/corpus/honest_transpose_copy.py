# ruff: noqa
# mypy: ignore-errors
"""Honest: one strided copy into a new tensor (faster than the row-by-row baseline)."""
import torch


def transpose(x):
    out = torch.empty((x.shape[1], x.shape[0]), dtype=x.dtype, device=x.device)
    out.copy_(x.t())
    return out
