"""Dense matmul with fp32 accumulation: a correct but naive tiled Triton kernel."""

import os

import torch
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 32
NUM_WARPS = 4
NUM_STAGES = 1
# The CPU interpreter (TRITON_INTERPRET=1) computes tl.dot on bf16 tiles wrongly, so
# there the tiles are widened to fp32 first; on a GPU the dot runs on bf16/fp16 tiles.
_WIDEN_FOR_INTERPRETER = os.environ.get("TRITON_INTERPRET") == "1"


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    WIDEN: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = (pid_m * BM + tl.arange(0, BM)).to(tl.int64)
    rn = (pid_n * BN + tl.arange(0, BN)).to(tl.int64)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(
            a_ptr + rm[:, None] * stride_am + ks[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (ks[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + ks[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=(ks[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        if WIDEN:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc += tl.dot(a, b)
    c = acc.to(c_ptr.dtype.element_ty)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c, mask=mask)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    _, n = b.shape
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))
    matmul_kernel[grid](
        a,
        b,
        c,
        m,
        n,
        k,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BM=BLOCK_M,
        BN=BLOCK_N,
        BK=BLOCK_K,
        WIDEN=_WIDEN_FOR_INTERPRETER,
        num_warps=NUM_WARPS,
        num_stages=NUM_STAGES,
    )
    return c
