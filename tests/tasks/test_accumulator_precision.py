"""The matmul task tells an fp32 accumulator from one kept in bfloat16 on the CPU too.

The task asks for fp32 accumulation. A kernel that rounds its running sum to the input
dtype after every K tile errs by about sqrt(K / tile) roundings of the sum, so it passed
every CPU shape while K stayed at most 80, and failed only on the GPU's (K of 2048 to
8192), which CPU-side rewards never saw. The CPU held-out shapes now include K = 4093,
where the bfloat16 accumulator misses the reference on every seed and the fp32 one meets
it. (An fp16 accumulator stays within fp16's tolerance of 1e-2 at any K tried: that
tolerance admits it.)
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from task_inputs import cases, close, reference_module  # noqa: E402  (needs torch)

TASK = "triton2triton/llm/matmul"
TILE = 32
"""The starting kernel's BLOCK_K: the accumulator is rounded once per tile."""


def _matmul(a: torch.Tensor, b: torch.Tensor, *, keep: torch.dtype) -> torch.Tensor:
    """``a @ b`` summed tile by tile along K, the running sum held in ``keep``."""
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=keep)
    for k in range(0, a.shape[1], TILE):
        acc = (acc.float() + a[:, k : k + TILE].float() @ b[k : k + TILE].float()).to(keep)
    return acc.to(a.dtype)


def test_a_bfloat16_accumulator_fails_a_cpu_held_out_shape_on_every_seed() -> None:
    spec, every = cases(TASK)
    ref = reference_module(TASK)
    long_k = [s for s in spec["shapes"]["cpu_heldout"] if s["K"] >= 4096 - 8]
    assert long_k, "a CPU held-out shape with K near 4096"
    caught = 0
    for shape, dtype, tol in every:
        for seed in range(4):
            a, b = ref.make_inputs(shape, getattr(torch, dtype), "cpu", seed)
            want = ref.reference(a, b)
            assert close(_matmul(a, b, keep=torch.float32), want, tol), (shape, dtype, seed)
            if dtype == "bfloat16" and shape in long_k:
                assert not close(_matmul(a, b, keep=torch.bfloat16), want, tol), (shape, seed)
                caught += 1
    assert caught == 4 * len(long_k)
