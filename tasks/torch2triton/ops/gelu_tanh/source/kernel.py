"""Tanh-approximated GELU, written in PyTorch: the starting point to rewrite in Triton."""

import torch
import torch.nn.functional as F


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x.float(), approximate="tanh").to(x.dtype)
