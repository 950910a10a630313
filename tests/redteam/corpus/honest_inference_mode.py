# ruff: noqa
# mypy: ignore-errors
"""Honest: runs under ``torch.inference_mode`` and an explicit disabled autocast."""
import torch


@torch.inference_mode()
def _compute(x):
    with torch.autocast(device_type=x.device.type, enabled=False):
        return x * 2.0 + 1.0


def scale(x):
    return _compute(x)
