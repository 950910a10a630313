"""MoE top-k routing weights: a plain PyTorch implementation of the specification."""

import torch


def moe_router_topk(logits: torch.Tensor, T: int, E: int, K: int) -> torch.Tensor:
    p = torch.softmax(logits.float(), dim=-1)
    order = torch.sort(logits, dim=-1, descending=True, stable=True).indices[:, :K]
    chosen = torch.gather(p, 1, order)
    w = torch.zeros(T, E, dtype=torch.float32, device=logits.device)
    w.scatter_(1, order, chosen / chosen.sum(dim=-1, keepdim=True))
    return w
