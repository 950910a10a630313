"""Decode attention in one pass: an online softmax over wider blocks of the KV cache.

A known-faster replacement for the starting kernel of e2e/llama/decode_attention (each
key is read once instead of twice, blocks twice as wide), used by
tools/e2e_bench.py and the CPU tests as the candidate.
"""

import math

import torch
import triton
import triton.language as tl

BLOCK_SIZE = 32
NUM_WARPS = 4


@triton.jit
def decode_attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    kc_ptr,
    vc_ptr,
    o_ptr,
    ctx,
    groups,
    scale,
    HD: tl.constexpr,
    BLOCK: tl.constexpr,
):
    head = tl.program_id(0).to(tl.int64)
    bk = head // groups
    d = tl.arange(0, HD)
    offs = tl.arange(0, BLOCK)
    q = tl.load(q_ptr + head * HD + d).to(tl.float32) * scale
    # Start from the new token: running max m, running sum total, running output acc.
    m = tl.sum(q * tl.load(k_ptr + bk * HD + d).to(tl.float32), axis=0)
    total = m * 0.0 + 1.0
    acc = tl.load(v_ptr + bk * HD + d).to(tl.float32)
    cache = bk * ctx * HD
    for start in range(0, ctx, BLOCK):
        n = start + offs
        mask = n < ctx
        kt = tl.load(kc_ptr + cache + n[:, None] * HD + d[None, :], mask=mask[:, None], other=0.0)
        vt = tl.load(vc_ptr + cache + n[:, None] * HD + d[None, :], mask=mask[:, None], other=0.0)
        s = tl.where(mask, tl.sum(kt.to(tl.float32) * q[None, :], axis=1), float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        total = total * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * vt.to(tl.float32), axis=0)
        m = m_new
    tl.store(o_ptr + head * HD + d, (acc / total).to(o_ptr.dtype.element_ty))


def decode_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor
) -> torch.Tensor:
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    k_cache, v_cache = k_cache.contiguous(), v_cache.contiguous()
    b, kv, g, hd = q.shape
    out = torch.empty_like(q)
    decode_attention_kernel[(b * kv * g,)](
        q,
        k,
        v,
        k_cache,
        v_cache,
        out,
        k_cache.shape[2],
        g,
        1.0 / math.sqrt(hd),
        HD=hd,
        BLOCK=BLOCK_SIZE,
        num_warps=NUM_WARPS,
    )
    return out
