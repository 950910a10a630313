"""Gated RMSNorm: a plain PyTorch implementation of the specification, to replace."""

import torch
import torch.nn.functional as F

EPS = 1e-5


def gated_rms_norm(x: torch.Tensor, z: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    h = x.float() * F.silu(z.float())
    r = torch.rsqrt(torch.mean(h.pow(2), dim=-1, keepdim=True) + EPS)
    return (h * r * weight.float()).to(x.dtype)
