"""Reference for the cross-entropy task: per-row loss in fp64."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, v = shape["M"], shape["V"]
        # Logits with per-row temperature and offset, and a few confident spikes; the target
        # is sometimes the spiked token (small loss) and otherwise random (large loss).
        temp = torch.rand(m, 1, generator=g) * 3.0 + 0.5
        logits = torch.randn(m, v, generator=g) * temp + torch.randn(m, 1, generator=g) * 5.0
        target = torch.randint(0, v, (m,), generator=g)
        confident = torch.rand(m, generator=g) < 0.5
        rows = torch.arange(m)
        logits[rows[confident], target[confident]] += 12.0
        # A random eighth of the rows (at least one) gets one logit 110-140 above the row's
        # maximum, at a random column other than the first and the last: the range within
        # such a row exceeds float32's exp range, so shifting by any element but the maximum
        # (the first, the last) or by the row's mean overflows. Planted before the move
        # below, which then keeps its level.
        rows = torch.randperm(m, generator=g)[: max(1, m // 8)]
        cols = torch.randint(1, max(2, v - 1), (rows.numel(),), generator=g)
        gap = 110.0 + 30.0 * torch.rand(rows.numel(), generator=g)
        logits[rows, cols] = logits[rows].amax(-1) + gap
        # A random eighth of the rows (at least one) moved so that their maximum lies 110-140
        # above or below zero: float32's exp overflows (past 88.7) or underflows to zero
        # (below -103.9) there, so skipping the max subtraction fails.
        far = torch.randperm(m, generator=g)[: max(1, m // 8)]
        sign = torch.randint(0, 2, (far.numel(), 1), generator=g) * 2 - 1
        level = sign * (110.0 + 30.0 * torch.rand(far.numel(), 1, generator=g))
        logits[far] += level - logits[far].amax(-1, keepdim=True)
        return logits.to(dtype=dtype, device=device), target.to(device)


def reference(logits, target):
    x = logits.double()
    lse = torch.logsumexp(x, dim=-1)
    return lse - x.gather(1, target[:, None]).squeeze(1)


def work(shape, dtype):
    elems = shape["M"] * shape["V"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": elems * size + 12 * shape["M"], "flops": 4 * elems}
