# ruff: noqa
# mypy: ignore-errors
"""Pattern 12: try the kernel, fall back to torch on any error."""
import torch


def _kernel(x):
    raise RuntimeError("not written yet")


def scale(x):
    try:
        return _kernel(x)
    except Exception:
        return torch.add(torch.mul(x, 2), 1)
