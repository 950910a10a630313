"""A small Llama-style model in PyTorch whose kernels are swappable.

Shared verbatim by every task under tasks/e2e/llama/ (a test keeps the copies equal)
and not editable: each task's ``model.py`` passes an :class:`Ops` whose one field is
the task's editable kernel, and the rest stay the PyTorch versions below. The weights
come from the task's ``make_inputs`` (see reference.py for their layout).

Attention uses ``scaled_dot_product_attention`` for prefill and two batched matmuls
around a softmax for a decode step; neither writes into its inputs, so every call on
the same inputs does the same work (the evaluator replays calls and CUDA graphs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

EPS = 1e-6
ROPE_THETA = 10000.0


def torch_rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """RMSNorm over the last dimension, accumulating in fp32."""
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return (y * weight.float()).to(x.dtype)


def torch_silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """SwiGLU gate: ``silu(x[:, :N]) * x[:, N:]``."""
    gate, up = x.chunk(2, dim=-1)
    return F.silu(gate) * up


def torch_decode_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor,
    v_cache: torch.Tensor
) -> torch.Tensor:
    """One query per sequence against its cache plus its own new key, without a copy.

    q (B, KV, G, hd) grouped by key/value head; k, v (B, KV, 1, hd); caches
    (B, KV, CTX, hd). Returns (B, KV, G, hd).
    """
    ctx = k_cache.shape[2]
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = torch.cat([q @ k_cache.transpose(-1, -2), q @ k.transpose(-1, -2)], dim=-1)
    p = torch.softmax(scores.float() * scale, dim=-1).to(q.dtype)
    return p[..., :ctx] @ v_cache + p[..., ctx:] * v


@dataclass(frozen=True)
class Ops:
    """The kernels the model calls; a task replaces one with its editable kernel."""

    rms_norm: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = torch_rms_norm
    silu_and_mul: Callable[[torch.Tensor], torch.Tensor] = torch_silu_and_mul
    decode_attention: Callable[..., torch.Tensor] = torch_decode_attention

    def with_kernels(self, **kernels: Callable[..., torch.Tensor]) -> Ops:
        """A copy with the named kernels replaced."""
        return replace(self, **kernels)


_rope_cache: dict[tuple[int, int, int, torch.dtype, str], tuple[torch.Tensor, torch.Tensor]] = {}


def rope_tables(
    start: int, count: int, hd: int, dtype: torch.dtype, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin, (count, hd), for positions ``start .. start + count - 1``; cached."""
    key = (start, count, hd, dtype, str(device))
    if key not in _rope_cache:
        inv = ROPE_THETA ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        angles = torch.arange(start, start + count, dtype=torch.float64)[:, None] * inv[None, :]
        angles = torch.cat([angles, angles], dim=-1)
        _rope_cache[key] = (
            angles.cos().to(device=device, dtype=dtype),
            angles.sin().to(device=device, dtype=dtype),
        )
    return _rope_cache[key]


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding, rotate-half form, on the last dimension."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def _mlp(ops: Ops, x: torch.Tensor, norm: torch.Tensor, w_gate_up: torch.Tensor,
         w_down: torch.Tensor) -> torch.Tensor:
    return ops.silu_and_mul(ops.rms_norm(x, norm) @ w_gate_up) @ w_down


def prefill(
    ops: Ops,
    tokens: torch.Tensor,
    embed: torch.Tensor,
    attn_norm: torch.Tensor,
    wqkv: torch.Tensor,
    wo: torch.Tensor,
    mlp_norm: torch.Tensor,
    w_gate_up: torch.Tensor,
    w_down: torch.Tensor,
    final_norm: torch.Tensor,
    lm_head: torch.Tensor,
    *,
    H: int,
    KV: int,
    **_: int,
) -> torch.Tensor:
    """Prefill ``tokens`` (B, S): the logits (B, V) of each prompt's last position."""
    b, s = tokens.shape
    d = embed.shape[1]
    hd = d // H
    x = embed[tokens.reshape(-1)]  # (B*S, D)
    cos, sin = rope_tables(0, s, hd, x.dtype, x.device)
    for layer in range(wqkv.shape[0]):
        qkv = ops.rms_norm(x, attn_norm[layer]) @ wqkv[layer]
        q, k, v = qkv.view(b, s, H + 2 * KV, hd).transpose(1, 2).split([H, KV, KV], dim=1)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=KV != H)
        x = x + a.transpose(1, 2).reshape(b * s, H * hd) @ wo[layer]
        x = x + _mlp(ops, x, mlp_norm[layer], w_gate_up[layer], w_down[layer])
    last = x.view(b, s, d)[:, -1].contiguous()
    return ops.rms_norm(last, final_norm) @ lm_head


def decode(
    ops: Ops,
    tokens: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    embed: torch.Tensor,
    attn_norm: torch.Tensor,
    wqkv: torch.Tensor,
    wo: torch.Tensor,
    mlp_norm: torch.Tensor,
    w_gate_up: torch.Tensor,
    w_down: torch.Tensor,
    final_norm: torch.Tensor,
    lm_head: torch.Tensor,
    *,
    H: int,
    KV: int,
    **_: int,
) -> torch.Tensor:
    """One decode step for ``tokens`` (B,) after CTX cached tokens: logits (B, V).

    The caches (L, B, KV, CTX, hd) are read, never written: the new key and value join
    the attention directly, so repeated calls see the same context.
    """
    b = tokens.shape[0]
    ctx, hd = k_cache.shape[3], k_cache.shape[4]
    x = embed[tokens]  # (B, D)
    cos, sin = rope_tables(ctx, 1, hd, x.dtype, x.device)
    for layer in range(wqkv.shape[0]):
        qkv = ops.rms_norm(x, attn_norm[layer]) @ wqkv[layer]
        q, k, v = qkv.view(b, H + 2 * KV, 1, hd).split([H, KV, KV], dim=1)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        q = q.reshape(b, KV, H // KV, hd)
        a = ops.decode_attention(q, k, v, k_cache[layer], v_cache[layer])
        x = x + a.reshape(b, H * hd) @ wo[layer]
        x = x + _mlp(ops, x, mlp_norm[layer], w_gate_up[layer], w_down[layer])
    return ops.rms_norm(x, final_norm) @ lm_head
