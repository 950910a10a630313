"""Reference for the prefix-sum task, computed in fp64."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, n = shape["M"], shape["N"]
        # Probabilities sorted in ascending order, as top-p sampling sees them (the tail
        # mass first): a softmax of heavy-tailed logits with a per-row temperature.
        temp = torch.rand(m, 1, generator=g) * 2.5 + 0.5
        logits = torch.randn(m, n, generator=g) * torch.exp(torch.randn(m, n, generator=g) * 0.5)
        probs = torch.softmax(logits * temp, dim=-1)
        probs = probs.sort(dim=-1).values
        return (probs.to(dtype=dtype, device=device),)


def reference(p):
    return torch.cumsum(p.double(), dim=-1)


def work(shape, dtype):
    elems = shape["M"] * shape["N"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": elems * (size + 4), "flops": elems}
