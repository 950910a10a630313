"""Reference for the MoE top-k router task, computed in fp64 with index tie-breaking."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        t, e = shape["T"], shape["E"]
        # Router logits with per-expert popularity biases and per-token sharpness; in
        # bfloat16 many values tie, which the index rule settles.
        bias = torch.randn(1, e, generator=g) * 1.5
        sharp = torch.rand(t, 1, generator=g) * 3.0 + 0.5
        logits = torch.randn(t, e, generator=g) * sharp + bias
        # A random eighth of the rows (at least one) gets one logit 110-140 above the row's
        # maximum, at a random column other than the first and the last: the range within
        # such a row exceeds float32's exp range, so shifting by any element but the maximum
        # (the first, the last) or by the row's mean overflows. Planted before the move
        # below, which then keeps its level.
        rows = torch.randperm(t, generator=g)[: max(1, t // 8)]
        cols = torch.randint(1, max(2, e - 1), (rows.numel(),), generator=g)
        gap = 110.0 + 30.0 * torch.rand(rows.numel(), generator=g)
        logits[rows, cols] = logits[rows].amax(-1) + gap
        # A random eighth of the rows (at least one) moved so that their maximum lies 110-140
        # above or below zero, where float32's exp fails unless the max is subtracted.
        far = torch.randperm(t, generator=g)[: max(1, t // 8)]
        sign = torch.randint(0, 2, (far.numel(), 1), generator=g) * 2 - 1
        level = sign * (110.0 + 30.0 * torch.rand(far.numel(), 1, generator=g))
        logits[far] += level - logits[far].amax(-1, keepdim=True)
        logits = logits.to(dtype)
        # Another random eighth: an expert outside the top K gets the K-th largest logit
        # exactly, so the lower-index rule decides and any other tie rule fails. Rows
        # without the planted logit go first: beside it the K-th weight (K > 1) is ~0.
        k = shape["K"]
        if k < e:
            order = torch.randperm(t, generator=g)
            spiked = torch.zeros(t, dtype=torch.bool)
            spiked[rows] = True
            tied = torch.cat([order[~spiked[order]], order[spiked[order]]])[: max(1, t // 8)]
            top = logits[tied].topk(k, dim=-1)
            pick = torch.rand(tied.numel(), e, generator=g).scatter(1, top.indices, -1.0)
            logits[tied, pick.argmax(-1)] = top.values[:, -1]
        return (logits.to(device),)


def reference(logits, T, E, K):
    p = torch.softmax(logits.double(), dim=-1)
    # A stable descending sort keeps the lower index first among equal values.
    order = torch.sort(logits.double(), dim=-1, descending=True, stable=True).indices
    chosen = order[:, :K]
    keep = torch.zeros_like(p).scatter(1, chosen, 1.0)
    w = p * keep
    return w / w.sum(dim=-1, keepdim=True)


def work(shape, dtype):
    t, e = shape["T"], shape["E"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": t * e * (size + 4), "flops": 6 * t * e}
