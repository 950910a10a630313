# ruff: noqa
# mypy: ignore-errors
"""Honest, and asks torch.cuda about the machine (NVML through torch's own ctypes)."""
import torch


def scale(x):
    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        torch.cuda.get_device_properties(x.device if x.is_cuda else 0)
        torch.cuda.synchronize()
    return torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))
