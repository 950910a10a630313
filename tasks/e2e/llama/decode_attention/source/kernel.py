"""Decode attention over a KV cache: a correct but naive Triton kernel.

One program per query head reads its key/value head's whole cache: once for the
maximum score, once more for the softmax sum and the weighted values, in small blocks;
query heads that share a key/value head each read it again.
"""

import math

import torch
import triton
import triton.language as tl

BLOCK_SIZE = 16
NUM_WARPS = 4


@triton.jit
def decode_attention_kernel(
    q_ptr, k_ptr, v_ptr, kc_ptr, vc_ptr, o_ptr, ctx, groups, scale,
    HD: tl.constexpr, BLOCK: tl.constexpr,
):
    head = tl.program_id(0).to(tl.int64)  # (b * KV + kv) * G + g
    bk = head // groups  # the (b, kv) pair: which cache and which new key/value
    d = tl.arange(0, HD)
    offs = tl.arange(0, BLOCK)
    q = tl.load(q_ptr + head * HD + d).to(tl.float32)
    s_new = tl.sum(q * tl.load(k_ptr + bk * HD + d).to(tl.float32), axis=0) * scale
    cache = bk * ctx * HD
    # Pass 1: the largest score.
    m = s_new
    for start in range(0, ctx, BLOCK):
        n = start + offs
        mask = n < ctx
        kt = tl.load(kc_ptr + cache + n[:, None] * HD + d[None, :], mask=mask[:, None], other=0.0)
        s = tl.sum(kt.to(tl.float32) * q[None, :], axis=1) * scale
        m = tl.maximum(m, tl.max(tl.where(mask, s, float("-inf")), axis=0))
    # Pass 2: the softmax sum and the weighted values, the new token included.
    p_new = tl.exp(s_new - m)
    denom = p_new
    acc = p_new * tl.load(v_ptr + bk * HD + d).to(tl.float32)
    for start in range(0, ctx, BLOCK):
        n = start + offs
        mask = n < ctx
        kt = tl.load(kc_ptr + cache + n[:, None] * HD + d[None, :], mask=mask[:, None], other=0.0)
        s = tl.sum(kt.to(tl.float32) * q[None, :], axis=1) * scale
        p = tl.where(mask, tl.exp(s - m), 0.0)
        vt = tl.load(vc_ptr + cache + n[:, None] * HD + d[None, :], mask=mask[:, None], other=0.0)
        denom += tl.sum(p, axis=0)
        acc += tl.sum(p[:, None] * vt.to(tl.float32), axis=0)
    tl.store(o_ptr + head * HD + d, (acc / denom).to(o_ptr.dtype.element_ty))


def decode_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor
) -> torch.Tensor:
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    k_cache, v_cache = k_cache.contiguous(), v_cache.contiguous()
    b, kv, g, hd = q.shape
    out = torch.empty_like(q)
    decode_attention_kernel[(b * kv * g,)](
        q, k, v, k_cache, v_cache, out, k_cache.shape[2], g, 1.0 / math.sqrt(hd),
        HD=hd, BLOCK=BLOCK_SIZE, num_warps=NUM_WARPS,
    )
    return out
