"""Reference for the column-sum task, computed in fp64."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, n = shape["M"], shape["N"]
        # Gradients with per-column means of either sign, at least 0.5 away from zero, and
        # heavy-tailed noise, so column sums grow with M and differ from any single row.
        sign = torch.where(torch.rand(1, n, generator=g) < 0.5, -1.0, 1.0)
        col_mean = sign * (0.5 + torch.randn(1, n, generator=g).abs())
        noise = torch.randn(m, n, generator=g) * torch.exp(torch.randn(m, n, generator=g) * 0.5)
        return ((col_mean + noise).to(dtype=dtype, device=device),)


def reference(x):
    return x.double().sum(dim=0)


def work(shape, dtype):
    elems = shape["M"] * shape["N"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": elems * size + 4 * shape["N"], "flops": elems}
