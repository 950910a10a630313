"""Reference for the fused residual-add + RMSNorm task, computed in fp64."""

import torch

EPS = 1e-6


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, n = shape["M"], shape["N"]
        # The residual stream is large and offset with outlier channels; the block output
        # added to it is smaller, so dropping either term changes the answer.
        scale = torch.exp(torch.randn(m, 1, generator=g))
        residual = (torch.randn(m, n, generator=g) + 0.5) * scale * 4.0
        outliers = torch.rand(n, generator=g) < 0.01
        residual = torch.where(outliers, residual * 8.0, residual)
        x = torch.randn(m, n, generator=g) * scale * 2.0 - 0.3
        # A random eighth of the rows (at least one) shrunk so that x + residual has an RMS
        # of 3e-4..1e-3, where the epsilon dominates: dropping or misplacing it fails.
        tiny = torch.randperm(m, generator=g)[: max(1, m // 8)]
        level = 10.0 ** (torch.rand(tiny.numel(), 1, generator=g) * 0.5 - 3.5)
        shrink = level / (x[tiny] + residual[tiny]).pow(2).mean(-1, keepdim=True).sqrt()
        x[tiny] *= shrink
        residual[tiny] *= shrink
        weight = torch.rand(n, generator=g) * 1.8 + 0.2
        return tuple(t.to(dtype=dtype, device=device) for t in (x, residual, weight))


def reference(x, residual, weight):
    h = x.double() + residual.double()
    rms = torch.sqrt(h.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return h / rms * weight.double()


def work(shape, dtype):
    elems = shape["M"] * shape["N"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": 3 * elems * size + shape["N"] * size, "flops": 5 * elems}
