"""Reference for the GeGLU task (exact-erf GELU gate), computed in fp64."""

import math

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, n = shape["M"], shape["N"]
        # A heavy-tailed, positively offset gate half and an offset value half, so outputs
        # are mostly far from zero.
        a = torch.randn(m, n, generator=g) * torch.exp(torch.randn(m, n, generator=g) * 0.5) + 0.5
        b = torch.randn(m, n, generator=g) * 1.5 - 0.7
        return (torch.cat([a, b], dim=1).to(dtype=dtype, device=device),)


def reference(x):
    n = x.shape[1] // 2
    a, b = x[:, :n].double(), x[:, n:].double()
    return 0.5 * a * (1.0 + torch.erf(a / math.sqrt(2.0))) * b


def work(shape, dtype):
    elems = shape["M"] * shape["N"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": 3 * elems * size, "flops": 8 * elems}
