"""Reference for the causal attention task, computed in fp64."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        b, h, s, d = shape["B"], shape["H"], shape["S"], shape["D"]
        # Queries and keys share a per-head direction (peaky attention, large logits) and
        # values carry a per-head offset, so outputs are far from zero and from any input.
        shared = torch.randn(1, h, 1, d, generator=g) * 0.6
        q = torch.randn(b, h, s, d, generator=g) + shared
        k = torch.randn(b, h, s, d, generator=g) + shared
        v = torch.randn(b, h, s, d, generator=g) * 1.5 + torch.randn(1, h, 1, d, generator=g)
        return tuple(t.to(dtype=dtype, device=device) for t in (q, k, v))


def reference(q, k, v):
    s, d = q.shape[-2], q.shape[-1]
    scores = (q.double() @ k.double().transpose(-1, -2)) / d**0.5
    mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v.double()


def work(shape, dtype):
    b, h, s, d = shape["B"], shape["H"], shape["S"], shape["D"]
    size = torch.empty((), dtype=dtype).element_size()
    # Causal: about half of the S x S score matrix, two matmuls of 2*D flops per entry.
    return {"bytes": 4 * b * h * s * d * size, "flops": 2 * b * h * s * s * d}
