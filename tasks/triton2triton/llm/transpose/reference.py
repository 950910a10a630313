"""Reference for the transpose task (exact)."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, n = shape["M"], shape["N"]
        # Distinct-looking values with an offset and a heavy tail, so a transposed copy can
        # only match if every element lands in its place.
        x = torch.randn(m, n, generator=g) * torch.exp(torch.randn(m, n, generator=g)) + 1.5
        return (x.to(dtype=dtype, device=device),)


def reference(x):
    return x.double().t().contiguous()


def work(shape, dtype):
    elems = shape["M"] * shape["N"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": 2 * elems * size, "flops": 0}
