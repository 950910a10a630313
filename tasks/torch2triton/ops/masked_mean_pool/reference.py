"""Reference for the masked mean-pooling task, computed in fp64."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        b, s, d = shape["B"], shape["S"], shape["D"]
        # Right-padded batches of random lengths (at least 1 token, often far fewer than S),
        # with padded positions holding large junk so ignoring the mask fails; token states
        # carry a per-channel offset so the mean is not near zero.
        lengths = torch.randint(1, s + 1, (b,), generator=g)
        # A random half of the rows (at least one) shorter than S and padded on the left
        # instead, so a kernel that sums the first sum(mask) positions fails.
        left = torch.randperm(b, generator=g)[: max(1, b // 2)]
        lengths[left] = lengths[left].clamp(max=max(1, s - 1))
        mask = (torch.arange(s)[None, :] < lengths[:, None]).long()
        mask[left] = mask[left].flip(-1)
        channel = torch.randn(1, 1, d, generator=g)
        hidden = torch.randn(b, s, d, generator=g) * 2.0 + channel
        junk = torch.randn(b, s, d, generator=g) * 50.0 + 30.0
        hidden = torch.where(mask[:, :, None].bool(), hidden, junk)
        return hidden.to(dtype=dtype, device=device), mask.to(device)


def reference(hidden, mask):
    m = mask.double()[:, :, None]
    return (hidden.double() * m).sum(dim=1) / m.sum(dim=1)


def work(shape, dtype):
    b, s, d = shape["B"], shape["S"], shape["D"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": b * s * d * size + 8 * b * s + 4 * b * d, "flops": 2 * b * s * d}
