"""Reference for the gated RMSNorm task, computed in fp64."""

import torch

EPS = 1e-5


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, n = shape["M"], shape["N"]
        # Row scales over two orders of magnitude, an offset on x and a gate biased open
        # with a heavy tail, so the gate matters and nothing is near zero or identity.
        scale = torch.exp(torch.randn(m, 1, generator=g))
        x = (torch.randn(m, n, generator=g) + 0.4) * scale
        z = torch.randn(m, n, generator=g) * torch.exp(torch.randn(m, n, generator=g) * 0.5) + 0.8
        # A random eighth of the rows (at least one) shrunk so that h = x * silu(z) has an
        # RMS of 1e-3..3e-3, where the epsilon dominates: dropping or misplacing it fails.
        tiny = torch.randperm(m, generator=g)[: max(1, m // 8)]
        level = 10.0 ** (torch.rand(tiny.numel(), 1, generator=g) * 0.5 - 3.0)
        h = x[tiny] * z[tiny] * torch.sigmoid(z[tiny])
        x[tiny] *= level / h.pow(2).mean(-1, keepdim=True).sqrt()
        weight = torch.rand(n, generator=g) * 1.5 + 0.25
        return tuple(t.to(dtype=dtype, device=device) for t in (x, z, weight))


def reference(x, z, weight):
    zd = z.double()
    h = x.double() * zd * torch.sigmoid(zd)
    r = torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return h * r * weight.double()


def work(shape, dtype):
    elems = shape["M"] * shape["N"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": 3 * elems * size + shape["N"] * size, "flops": 9 * elems}
