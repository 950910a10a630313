"""Reference for the per-row int8 quantization task: exact quantized values in fp64."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, n = shape["M"], shape["N"]
        # Per-row scales over three orders of magnitude, an offset, and a few outlier
        # channels (the reason activation quantization is per token). Row maxima stay far
        # from 127, so returning the input unquantized fails.
        scale = torch.exp(torch.rand(m, 1, generator=g) * 6.0 - 4.5)
        x = (torch.randn(m, n, generator=g) - 0.2) * scale
        outliers = torch.rand(n, generator=g) < 0.005
        x = torch.where(outliers, x * 6.0, x)
        return (x.to(dtype=dtype, device=device),)


def reference(x):
    xd = x.double()
    scale = xd.abs().amax(dim=-1, keepdim=True) / 127.0
    return torch.clamp(torch.round(xd / scale), -127.0, 127.0)


def work(shape, dtype):
    elems = shape["M"] * shape["N"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": elems * size + elems, "flops": 3 * elems}
