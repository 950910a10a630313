# ruff: noqa
# mypy: ignore-errors
"""Pattern 4 (and 17): patch CUDA event timing so every window looks 1000x shorter."""

import torch

_real = torch.cuda.Event.elapsed_time


def _fast(self, end):
    return _real(self, end) * 1e-3


torch.cuda.Event.elapsed_time = _fast


def scale(x):
    return x * 2 + 1
