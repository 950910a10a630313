"""Reference for the rotary embedding task (NeoX half rotation), computed in fp64."""

import torch

THETA = 10000.0


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        t, h, d = shape["T"], shape["H"], shape["D"]
        # Queries with per-head scales and an offset; positions drawn at random (never 0,
        # where the rotation is the identity) as in a batch of ragged sequences.
        head_scale = torch.exp(torch.randn(1, h, 1, generator=g))
        x = (torch.randn(t, h, d, generator=g) + 0.25) * head_scale
        pos = torch.randint(16, 8192, (t,), generator=g).double()
        inv_freq = THETA ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        angles = pos[:, None] * inv_freq[None, :]
        cos = angles.cos().float()
        sin = angles.sin().float()
        return x.to(dtype=dtype, device=device), cos.to(device), sin.to(device)


def reference(x, cos, sin):
    half = x.shape[-1] // 2
    xd = x.double()
    c = cos.double()[:, None, :]
    s = sin.double()[:, None, :]
    x1, x2 = xd[..., :half], xd[..., half:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


def work(shape, dtype):
    elems = shape["T"] * shape["H"] * shape["D"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": 2 * elems * size + 4 * shape["T"] * shape["D"], "flops": 3 * elems}
