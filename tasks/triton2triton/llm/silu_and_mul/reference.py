"""Reference for the SiLU-and-mul task (SwiGLU gate), computed in fp64."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, n = shape["M"], shape["N"]
        # Heavy-tailed activations: a normal times a log-normal scale per element, with the
        # gate half shifted positive so most outputs are far from zero.
        a = torch.randn(m, n, generator=g) * torch.exp(torch.randn(m, n, generator=g) * 0.5) + 1.0
        b = torch.randn(m, n, generator=g) * 2.0 + 0.5
        x = torch.cat([a, b], dim=1)
        return (x.to(dtype=dtype, device=device),)


def reference(x):
    n = x.shape[1] // 2
    a, b = x[:, :n].double(), x[:, n:].double()
    return a * torch.sigmoid(a) * b


def work(shape, dtype):
    elems = shape["M"] * shape["N"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": 3 * elems * size, "flops": 6 * elems}
