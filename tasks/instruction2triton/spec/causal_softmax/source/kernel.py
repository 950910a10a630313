"""Scaled causal softmax: a plain PyTorch implementation of the specification."""

import torch

SCALE = 0.125


def causal_softmax(x: torch.Tensor) -> torch.Tensor:
    s = x.shape[-1]
    above = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
    scores = (x.float() * SCALE).masked_fill(above, float("-inf"))
    return torch.softmax(scores, dim=-1).to(x.dtype)
