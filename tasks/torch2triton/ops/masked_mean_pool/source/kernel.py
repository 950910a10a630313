"""Masked mean pooling, written in PyTorch: the starting point to rewrite in Triton."""

import torch


def masked_mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.to(torch.float32).unsqueeze(-1)
    total = torch.sum(hidden.float() * m, dim=1)
    count = torch.sum(m, dim=1)
    return total / count
