"""y = 2x + 1 on a vector, in fp64; inputs offset and scaled (not standard normal)."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape["N"], generator=g) * 3 + 1
    return (x.to(dtype=dtype, device=device),)


def reference(x):
    return x.double() * 2 + 1


def work(shape, dtype):
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": 2 * shape["N"] * size, "flops": 2 * shape["N"]}
