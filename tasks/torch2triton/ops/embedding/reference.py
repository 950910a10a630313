"""Reference for the embedding-lookup task (exact)."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        t, v, d = shape["T"], shape["V"], shape["D"]
        # Token ids follow a Zipf-like law (frequent tokens repeat, as in real text); table
        # rows have their own offsets and scales so rows are easy to tell apart.
        ranks = torch.rand(t, generator=g).pow(3.0)
        ids = (ranks * v).long().clamp_max(v - 1)
        ids = torch.randperm(v, generator=g)[ids]
        row_offset = torch.randn(v, 1, generator=g)
        weight = torch.randn(v, d, generator=g) * torch.exp(torch.randn(v, 1, generator=g) * 0.5)
        weight = weight + row_offset
        return ids.to(device), weight.to(dtype=dtype, device=device)


def reference(ids, weight):
    return weight.double()[ids]


def work(shape, dtype):
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": 2 * shape["T"] * shape["D"] * size + 8 * shape["T"], "flops": 0}
