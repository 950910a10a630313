"""Reference for the scaled causal softmax task, computed in fp64."""

import torch

SCALE = 0.125


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        b, s = shape["B"], shape["S"]
        # Raw q.k scores: a per-matrix offset and spread, a recency bias near the diagonal,
        # and huge junk above it, so a kernel that forgets the mask or the scale fails.
        spread = torch.rand(b, 1, 1, generator=g) * 20.0 + 4.0
        x = torch.randn(b, s, s, generator=g) * spread + torch.randn(b, 1, 1, generator=g) * 40.0
        idx = torch.arange(s)
        x = x + 16.0 * torch.exp(-(idx[:, None] - idx[None, :]).abs().float() / 8.0)
        above = idx[None, :] > idx[:, None]
        x = torch.where(above, x + 500.0, x)
        # A random eighth of the matrices (at least one) moved so that their largest scaled
        # score below the diagonal lies 110-140 above or below zero: float32's exp
        # overflows or underflows to zero there, so skipping the max subtraction fails.
        far = torch.randperm(b, generator=g)[: max(1, b // 8)]
        sign = torch.randint(0, 2, (far.numel(), 1, 1), generator=g) * 2 - 1
        level = sign * (110.0 + 30.0 * torch.rand(far.numel(), 1, 1, generator=g))
        top = torch.where(above, float("-inf"), x[far]).amax(dim=(-2, -1), keepdim=True)
        x[far] += level / SCALE - top
        # Another random eighth of the matrices (at least one): in a random row of the lower
        # half, one score at a random key other than the first and the diagonal is set
        # 110-140 (scaled) above the row's largest: the range within that row exceeds
        # float32's exp range as well, so shifting by any other score (the first, the
        # diagonal) or by the row's mean overflows, not only no shift.
        if s >= 3:
            mats = torch.randperm(b, generator=g)[: max(1, b // 8)]
            rows = torch.randint(max(2, s // 2), s, (mats.numel(),), generator=g)
            cols = (torch.rand(mats.numel(), generator=g) * (rows - 1)).long() + 1
            gap = (110.0 + 30.0 * torch.rand(mats.numel(), generator=g)) / SCALE
            allowed = idx[None, :] <= rows[:, None]
            top = torch.where(allowed, x[mats, rows], float("-inf")).amax(-1)
            x[mats, rows, cols] = top + gap
        return (x.to(dtype=dtype, device=device),)


def reference(x):
    s = x.shape[-1]
    above = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
    scores = (x.double() * SCALE).masked_fill(above, float("-inf"))
    return torch.softmax(scores, dim=-1)


def work(shape, dtype):
    elems = shape["B"] * shape["S"] * shape["S"]
    size = torch.empty((), dtype=dtype).element_size()
    # An ideal kernel reads only the causal half but writes every element.
    return {"bytes": elems * size // 2 + elems * size, "flops": 3 * elems // 2}
