"""GeGLU: a plain PyTorch implementation of the specification, to replace."""

import torch
import torch.nn.functional as F


def geglu(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[1] // 2
    a, b = x[:, :n].float(), x[:, n:].float()
    return (F.gelu(a) * b).to(x.dtype)
