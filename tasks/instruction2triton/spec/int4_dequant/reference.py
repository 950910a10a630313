"""Reference for the int4 dequantization task, computed in fp64."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        n, k, gs = shape["N"], shape["K"], shape["G"]
        # Codes concentrated around the zero point (as quantized weights are), clipped to
        # 0..15 and never all 8; scales log-normal per group.
        codes = (torch.randn(n, k, generator=g) * 3.5 + 8.0).round().clamp(0, 15).to(torch.uint8)
        packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
        scales = torch.exp(torch.randn(n, k // gs, generator=g) * 0.7 - 4.0)
        return packed.to(device), scales.to(dtype=dtype, device=device)


def reference(packed, scales):
    n, half = packed.shape
    k = 2 * half
    p = packed.long()
    codes = torch.stack([p & 0xF, p >> 4], dim=-1).reshape(n, k).double()
    group = k // scales.shape[1]
    s = scales.double().repeat_interleave(group, dim=1)
    return (codes - 8.0) * s


def work(shape, dtype):
    n, k, gs = shape["N"], shape["K"], shape["G"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": n * k // 2 + n * (k // gs) * size + n * k * size, "flops": 2 * n * k}
