"""Reference for the row-wise L2 normalization task, computed in fp64."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, n = shape["M"], shape["N"]
        # Embeddings with a shared offset direction and row norms spread over four orders
        # of magnitude, so neither the input nor a constant is close to the answer.
        direction = torch.randn(1, n, generator=g) * 0.5
        scale = torch.exp(torch.rand(m, 1, generator=g) * 9.0 - 4.0)
        x = (torch.randn(m, n, generator=g) + direction) * scale
        # Where there are several rows, a random eighth of them (at least one) are all zero:
        # dividing by the norm without the clamp at 1e-12 gives NaN there.
        zero = torch.randperm(m, generator=g)[: max(1, m // 8) if m > 1 else 0]
        x[zero] = 0.0
        return (x.to(dtype=dtype, device=device),)


def reference(x):
    xd = x.double()
    return xd / xd.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def work(shape, dtype):
    elems = shape["M"] * shape["N"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": 2 * elems * size, "flops": 3 * elems}
