import torch


def tiny(x: torch.Tensor) -> torch.Tensor:
    return x * 1e-7
