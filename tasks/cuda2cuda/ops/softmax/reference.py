"""Reference for the softmax task: fp64 softmax over the last dimension."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, n = shape["M"], shape["N"]
        # Logit-like values: scaled and offset so a kernel that skips the max subtraction
        # overflows, with a heavy tail from a few large entries per row.
        x = torch.randn(m, n, generator=g, dtype=torch.float32) * 4.0 + 20.0
        spikes = torch.rand(m, n, generator=g) < 0.01
        x = torch.where(spikes, x + 30.0, x)
        # A random eighth of the rows (at least one) gets one value 110-140 above the row's
        # maximum, at a random column other than the first and the last: the range within
        # such a row exceeds float32's exp range, so shifting by any element but the maximum
        # (the first, the last) or by the row's mean overflows. Planted before the move
        # below, which then keeps its level.
        rows = torch.randperm(m, generator=g)[: max(1, m // 8)]
        cols = torch.randint(1, max(2, n - 1), (rows.numel(),), generator=g)
        gap = 110.0 + 30.0 * torch.rand(rows.numel(), generator=g)
        x[rows, cols] = x[rows].amax(-1) + gap
        # A random eighth of the rows (at least one) moved so that their maximum lies 110-140
        # above or below zero: float32's exp overflows (past 88.7) or underflows to zero
        # (below -103.9) there, so skipping the max subtraction fails.
        far = torch.randperm(m, generator=g)[: max(1, m // 8)]
        sign = torch.randint(0, 2, (far.numel(), 1), generator=g) * 2 - 1
        level = sign * (110.0 + 30.0 * torch.rand(far.numel(), 1, generator=g))
        x[far] += level - x[far].amax(-1, keepdim=True)
        return (x.to(dtype=dtype, device=device),)


def reference(x):
    return torch.softmax(x.double(), dim=-1)


def work(shape, dtype):
    elems = shape["M"] * shape["N"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": 2 * elems * size, "flops": 5 * elems}
