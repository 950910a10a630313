"""Reference for the GELU(tanh)-and-mul task, computed in fp64."""

import math

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, n = shape["M"], shape["N"]
        # A heavy-tailed, positively offset gate half and an offset value half, so outputs
        # are mostly far from zero.
        a = torch.randn(m, n, generator=g) * torch.exp(torch.randn(m, n, generator=g) * 0.5) + 0.6
        b = torch.randn(m, n, generator=g) * 1.5 + 0.4
        return (torch.cat([a, b], dim=1).to(dtype=dtype, device=device),)


def reference(x):
    n = x.shape[1] // 2
    a, b = x[:, :n].double(), x[:, n:].double()
    inner = math.sqrt(2.0 / math.pi) * (a + 0.044715 * a**3)
    return 0.5 * a * (1.0 + torch.tanh(inner)) * b


def work(shape, dtype):
    elems = shape["M"] * shape["N"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": 3 * elems * size, "flops": 12 * elems}
