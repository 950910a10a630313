"""Group-wise int4 dequantization: a plain PyTorch implementation of the specification."""

import torch


def int4_dequant(packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    n, half = packed.shape
    k = 2 * half
    p = packed.to(torch.int32)
    codes = torch.stack([p & 0xF, p >> 4], dim=-1).reshape(n, k).to(torch.float32)
    group = k // scales.shape[1]
    s = scales.to(torch.float32).repeat_interleave(group, dim=1)
    return ((codes - 8.0) * s).to(scales.dtype)
