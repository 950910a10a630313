"""A deliberately slow baseline: y = 2x + 1 chunk by chunk in fp64."""

import torch


def scale(x: torch.Tensor) -> torch.Tensor:
    parts = [(c.double() * 2 + 1).to(x.dtype) for c in x.chunk(16)]
    return torch.cat(parts)
