"""Tasks that need the max subtraction draw inputs on which skipping it, or shifting by
anything else, fails.

A softmax kernel computing ``exp(x) / sum(exp(x))`` in float32 was judged correct on the
bundled softmax task: its reference said the inputs made such a kernel overflow, but the
drawn logits topped out near 68, where float32's ``exp`` still fits (it overflows past
about 88.7 and underflows to zero below about -103). Every task whose operation is
computed stably by subtracting the row's maximum now shifts a random eighth of its rows
(at least one) 100-140 up or down. So on every shape, dtype and seed, the naive formula
in float32 misses the reference beyond the task's tolerance, while the stable formula in
float32 meets it.

That alone killed only the shift by zero: the range within a row stayed under about 50,
so a kernel shifting by any element of the row (the first, the last, the diagonal, the
new token's score) or by the row's mean, a pass cheaper than the max (and, in flash or
decode attention, no rescaling of the accumulator), kept every ``exp`` in range and was
judged correct, though it returns NaN once one score exceeds the chosen one by about 89
(a masked logit, one sharp attention score). So each task also plants, in a random part
of every input set, one score 110-140 above the rest of its row at a random allowed
position (not the first, the last, the diagonal nor the new token; for attention, by
moving a key along its query): each such shift misses the tolerance on every seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from task_inputs import cases, close, reference_module  # noqa: E402  (needs torch)

HONEST, NAIVE = "max", "none"
ROW_SHIFTS = ("first", "last", "mean")
"""Shortcuts of a plain row: shift by its first element, its last one, or its mean."""
CAUSAL_SHIFTS = ("first", "diagonal", "mean")
"""Of a causal row (keys 0..i): its first key, the diagonal (key i), or the allowed mean."""
DECODE_SHIFTS = ("first", "last cached", "new token", "mean")
"""Of a decode row (the cached keys, then the new token's): as named."""


def _shift(x: Any, how: str, allowed: Any = None) -> Any:
    """What a kernel subtracts from each row of ``x`` (..., n) before ``exp``, kept as
    (..., 1); ``allowed`` (the causal mask's keep) limits the max and the mean."""
    if allowed is not None:
        x = x.masked_fill(~allowed, float("-inf"))
    if how == HONEST:
        return x.amax(-1, keepdim=True)
    if how == NAIVE:
        return torch.zeros_like(x[..., :1])
    if how == "mean":
        if allowed is None:
            return x.mean(-1, keepdim=True)
        return torch.where(allowed, x, 0.0).sum(-1, keepdim=True) / allowed.sum(-1, keepdim=True)
    if how == "diagonal":
        return x.diagonal(dim1=-2, dim2=-1)[..., None]
    column = {"first": 0, "last": -1, "last cached": -2, "new token": -1}[how]
    return x[..., [column]]


def _softmax(x: Any, how: str, allowed: Any = None) -> Any:
    e = torch.exp(x - _shift(x, how, allowed))
    if allowed is not None:
        e = e.masked_fill(~allowed, 0.0)
    return e / e.sum(-1, keepdim=True)


def _lse(x: Any, how: str) -> Any:
    m = _shift(x, how)
    return (torch.log(torch.exp(x - m).sum(-1, keepdim=True)) + m).squeeze(-1)


def _causal(s: int) -> Any:
    return torch.ones(s, s, dtype=torch.bool).tril()


def _router(x: Any, k: int, how: str) -> Any:
    order = torch.sort(x, dim=-1, descending=True, stable=True).indices
    keep = torch.zeros_like(x).scatter(1, order[:, :k], 1.0)
    w = torch.exp(x - _shift(x, how)) * keep
    return w / w.sum(-1, keepdim=True)


def _attention(q: Any, k: Any, v: Any, how: str) -> Any:
    s = q.shape[-2]
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return _softmax(scores, how, _causal(s)) @ v


def _decode(ref: Any, how: str, shape: dict[str, int], *inputs: Any) -> Any:
    """The e2e model's reference (fp32 already) with its attention shifting by ``how``."""

    def attention(q: Any, k: Any, v: Any, causal: bool) -> Any:
        assert not causal  # a decode step: one query against the cache and its own key
        groups = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        return _softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), how) @ v

    exact = ref._attention
    ref._attention = attention
    try:
        return ref.reference(*inputs, **shape)
    finally:
        ref._attention = exact


Formula = Callable[..., Any]
FORMULAS: dict[str, tuple[Formula, tuple[str, ...]]] = {
    "triton2triton/llm/softmax": (lambda ref, how, shape, x: _softmax(x, how), ROW_SHIFTS),
    "cuda2cuda/ops/softmax": (lambda ref, how, shape, x: _softmax(x, how), ROW_SHIFTS),
    "triton2triton/llm/log_softmax": (
        lambda ref, how, shape, x: x - _lse(x, how)[..., None],
        ROW_SHIFTS,
    ),
    "torch2triton/ops/logsumexp": (lambda ref, how, shape, x: _lse(x, how), ROW_SHIFTS),
    "triton2triton/llm/cross_entropy": (
        lambda ref, how, shape, x, t: _lse(x, how) - x.gather(1, t[:, None]).squeeze(1),
        ROW_SHIFTS,
    ),
    "torch2triton/ops/kl_div": (
        lambda ref, how, shape, t, s: (
            _softmax(t, how) * ((t - _lse(t, how)[..., None]) - (s - _lse(s, how)[..., None]))
        ).sum(-1),
        ROW_SHIFTS,
    ),
    "instruction2triton/spec/moe_router_topk": (
        lambda ref, how, shape, x: _router(x, shape["K"], how),
        ROW_SHIFTS,
    ),
    "instruction2triton/spec/causal_softmax": (
        lambda ref, how, shape, x: _softmax(x * ref.SCALE, how, _causal(x.shape[-1])),
        CAUSAL_SHIFTS,
    ),
    "torch2triton/ops/causal_attention": (
        lambda ref, how, shape, q, k, v: _attention(q, k, v, how),
        CAUSAL_SHIFTS,
    ),
    "e2e/llama/decode_attention": (_decode, DECODE_SHIFTS),
}
"""Per task: the operation in float32 shifting each row by ``how`` (``HONEST``: the
max), and the shortcuts (besides no shift) that its inputs must catch."""


def _outcomes(task: str, how: str, seed: int) -> list[tuple[str, bool]]:
    """(case, whether ``how`` meets the tolerance) on every CPU case of ``task``."""
    ref, (formula, _) = reference_module(task), FORMULAS[task]
    spec, every = cases(task)
    done = []
    for shape, dtype, tol in every:
        inputs = ref.make_inputs(shape, getattr(torch, dtype), "cpu", seed)
        want = ref.reference(*inputs, **(shape if spec.get("pass_shape") else {}))
        as_f32 = [t.float() if t.is_floating_point() else t for t in inputs]
        got = formula(ref, how, shape, *as_f32)
        done.append((f"{task} {shape} {dtype} seed {seed}", close(got, want, tol)))
    return done


@pytest.mark.parametrize("task", sorted(FORMULAS))
def test_skipping_the_max_subtraction_fails_on_every_case(task: str) -> None:
    for seed in range(3):
        for where, ok in _outcomes(task, HONEST, seed):
            assert ok, f"stable misses: {where}"
        for where, ok in _outcomes(task, NAIVE, seed):
            assert not ok, f"naive passes: {where}"


@pytest.mark.parametrize(
    ("task", "how"),
    [(task, how) for task in sorted(FORMULAS) for how in FORMULAS[task][1]],
)
def test_shifting_by_another_element_fails_on_every_seed(task: str, how: str) -> None:
    """Each seed's input sets catch the shift on some case (the honest one meets all of
    them, checked above): the planted row's range exceeds exp's, wherever it lies."""
    for seed in range(3):
        outcomes = _outcomes(task, how, seed)
        assert not all(ok for _, ok in outcomes), f"shift by {how} passes every case: {outcomes}"
