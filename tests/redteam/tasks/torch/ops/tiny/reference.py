"""A degenerate task on purpose: the output is ~1e-7, inside the tolerance of zero."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape["N"], generator=g).to(dtype=dtype, device=device),)


def reference(x):
    return x.double() * 1e-7
