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
        # A random eighth of the heads (at least one): in a random query row of the lower
        # half, the score of a random key other than the first and the diagonal is made
        # 110-140 above the row's largest other score, by moving that key along the query
        # (the part of it off the head's shared direction, so other rows' scores move less).
        # The range within that row exceeds float32's exp range, so a kernel that skips the
        # max, or shifts by any other score (the first, the diagonal) or by the row's mean,
        # overflows; the honest one returns about that key's value.
        if s >= 3:
            heads = torch.randperm(b * h, generator=g)[: max(1, b * h // 8)]
            hb, hh = heads // h, heads % h
            rows = torch.randint(max(2, s // 2), s, (heads.numel(),), generator=g)
            cols = (torch.rand(heads.numel(), generator=g) * (rows - 1)).long() + 1
            gap = 110.0 + 30.0 * torch.rand(heads.numel(), generator=g)
            scale = d**-0.5
            qi = q[hb, hh, rows].to(dtype).float()  # (n, d): the query as the kernel sees it
            scores = (qi[:, None, :] * k[hb, hh].to(dtype).float()).sum(-1) * scale
            others = torch.arange(s)[None, :] <= rows[:, None]
            others[torch.arange(heads.numel()), cols] = False
            top = torch.where(others, scores, float("-inf")).amax(-1)
            unit = shared[0, hh, 0] / shared[0, hh, 0].norm(dim=-1, keepdim=True)
            w = qi - (qi * unit).sum(-1, keepdim=True) * unit
            lift = top + gap - scores[torch.arange(heads.numel()), cols]
            k[hb, hh, cols] += (lift / ((qi * w).sum(-1) * scale))[:, None] * w
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
