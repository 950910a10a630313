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
        return (logits.to(dtype=dtype, device=device),)


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
