"""Reference for the LayerNorm task, computed in fp64."""

import torch

EPS = 1e-5


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, n = shape["M"], shape["N"]
        # A large per-row offset relative to the spread punishes E[x^2] - E[x]^2 in low
        # precision; spreads vary over two orders of magnitude between rows.
        offset = torch.randn(m, 1, generator=g) * 4.0
        spread = torch.exp(torch.rand(m, 1, generator=g) * 4.0 - 2.0)
        # A random eighth of the rows (at least one): spread 3e-3..1e-2, offset 150-300 spreads;
        # dropping the epsilon fails there, and so does E[x^2] - E[x]^2 in float32.
        far = torch.randperm(m, generator=g)[: max(1, m // 8)]
        spread[far] = 10.0 ** (torch.rand(far.numel(), 1, generator=g) * 0.5 - 2.5)
        sign = torch.randint(0, 2, (far.numel(), 1), generator=g) * 2 - 1
        offset[far] = sign * spread[far] * (150.0 + 150.0 * torch.rand(far.numel(), 1, generator=g))
        x = offset + torch.randn(m, n, generator=g) * spread
        weight = torch.rand(n, generator=g) * 1.5 + 0.25
        bias = torch.randn(n, generator=g) * 0.5 + 0.2
        return tuple(t.to(dtype=dtype, device=device) for t in (x, weight, bias))


def reference(x, weight, bias):
    xd = x.double()
    mean = xd.mean(dim=-1, keepdim=True)
    var = (xd - mean).pow(2).mean(dim=-1, keepdim=True)
    return (xd - mean) / torch.sqrt(var + EPS) * weight.double() + bias.double()


def work(shape, dtype):
    elems = shape["M"] * shape["N"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": 2 * elems * size + 2 * shape["N"] * size, "flops": 8 * elems}
