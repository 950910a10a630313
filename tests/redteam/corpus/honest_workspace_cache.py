# ruff: noqa
# mypy: ignore-errors
"""Honest: a workspace tensor kept across calls per (shape, dtype, device), never the output.

Caching scratch buffers is what real kernels do to avoid allocator traffic. The
intermediate product goes into the cached workspace; the output is a fresh tensor
computed from it on every call, so nothing a call returns is shared with another.
"""
import torch

_workspace = {}


def _scratch(x):
    key = (tuple(x.shape), x.dtype, x.device)
    buf = _workspace.get(key)
    if buf is None:
        buf = _workspace[key] = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    return buf


def scale(x):
    tmp = _scratch(x)
    torch.mul(x, 2.0, out=tmp)
    return tmp + 1.0
