"""Reference for the RMSNorm task, computed in fp64."""

import torch

EPS = 1e-6


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, n = shape["M"], shape["N"]
        # Rows of very different scale (log-normal) with an offset, and a few outlier
        # channels ten times larger, as in the residual stream of a large model.
        scale = torch.exp(torch.randn(m, 1, generator=g) * 1.5)
        x = (torch.randn(m, n, generator=g) + 0.3) * scale
        outliers = torch.rand(n, generator=g) < 0.01
        x = torch.where(outliers, x * 10.0, x)
        # A random eighth of the rows (at least one) shrunk to an RMS of 3e-4..1e-3, where
        # the epsilon dominates: dropping it, or adding it outside the sqrt, fails.
        tiny = torch.randperm(m, generator=g)[: max(1, m // 8)]
        level = 10.0 ** (torch.rand(tiny.numel(), 1, generator=g) * 0.5 - 3.5)
        x[tiny] *= level / x[tiny].pow(2).mean(-1, keepdim=True).sqrt()
        weight = torch.rand(n, generator=g) * 1.8 + 0.2
        return x.to(dtype=dtype, device=device), weight.to(dtype=dtype, device=device)


def reference(x, weight):
    xd = x.double()
    rms = torch.sqrt(xd.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return xd / rms * weight.double()


def work(shape, dtype):
    elems = shape["M"] * shape["N"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": 2 * elems * size + shape["N"] * size, "flops": 4 * elems}
