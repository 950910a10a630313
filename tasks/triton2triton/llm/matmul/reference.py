"""Reference for the matmul task: fp64 matrix product of the (rounded) inputs."""

import torch


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.device(device):  # generated where it is used: fast at GPU sizes
        m, n, k = shape["M"], shape["N"], shape["K"]
        # Activations with an offset and per-row scales; weights scaled by 1/sqrt(K) with
        # per-column scales, so outputs are O(1)..O(10) and have a non-zero mean.
        a = (torch.randn(m, k, generator=g) + 0.2) * torch.exp(torch.randn(m, 1, generator=g) * 0.5)
        b = (torch.randn(k, n, generator=g) + 0.1) * (torch.rand(1, n, generator=g) + 0.5) / k**0.5
        return a.to(dtype=dtype, device=device), b.to(dtype=dtype, device=device)


def reference(a, b):
    return a.double() @ b.double()


def work(shape, dtype):
    m, n, k = shape["M"], shape["N"], shape["K"]
    size = torch.empty((), dtype=dtype).element_size()
    return {"bytes": (m * k + k * n + m * n) * size, "flops": 2 * m * n * k}
