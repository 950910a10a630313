"""Reference for the argmax task: the index of each row's (unique) maximum."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, v = shape["M"], shape["V"]
        # Heavy-tailed logits with per-row offsets, then one planted winner per row that
        # beats the runner-up by a margin visible in every dtype, at a column never 0.
        x = torch.randn(m, v, generator=g) * torch.exp(torch.randn(m, v, generator=g) * 0.5)
        x = x + torch.randn(m, 1, generator=g) * 10.0
        # A random eighth of the rows (at least one) moved wholly below zero (maximum at -5 to
        # -50), so a running maximum started at 0 (or padding read as 0) fails.
        neg = torch.randperm(m, generator=g)[: max(1, m // 8)]
        level = -5.0 - 45.0 * torch.rand(neg.numel(), 1, generator=g)
        x[neg] += level - x[neg].amax(-1, keepdim=True)
        x = x.to(dtype)
        win = torch.randint(1, v, (m,), generator=g)
        top = x.float().amax(dim=-1)
        x[torch.arange(m), win] = (top + top.abs() * 0.05 + 1.0).to(dtype)
        return (x.to(device),)


def reference(logits):
    return torch.argmax(logits.double(), dim=-1).double()


def work(shape, dtype):
    elems = shape["M"] * shape["V"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": elems * size + 8 * shape["M"], "flops": elems}
