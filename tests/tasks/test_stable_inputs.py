"""Tasks that need the max subtraction draw inputs on which skipping it fails.

A softmax kernel computing ``exp(x) / sum(exp(x))`` in float32 was judged correct on the
bundled softmax task: its reference said the inputs made such a kernel overflow, but the
drawn logits topped out near 68, where float32's ``exp`` still fits (it overflows past
about 88.7 and underflows to zero below about -103). Every task whose operation is
computed stably by subtracting the row's maximum now shifts a random eighth of its rows
(at least one) 100-140 up or down. So on every shape, dtype and seed, the naive formula
in float32 misses the reference beyond the task's tolerance, while the stable formula in
float32 meets it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from task_inputs import cases, close, reference_module  # noqa: E402  (needs torch)


def _softmax(x: Any, stable: bool) -> Any:
    shifted = x - x.amax(-1, keepdim=True) if stable else x
    e = torch.exp(shifted)
    return e / e.sum(-1, keepdim=True)


def _lse(x: Any, stable: bool) -> Any:
    m = x.amax(-1, keepdim=True) if stable else torch.zeros_like(x[..., :1])
    return (torch.log(torch.exp(x - m).sum(-1, keepdim=True)) + m).squeeze(-1)


def _causal(x: Any, stable: bool, scale: float) -> Any:
    s = x.shape[-1]
    above = torch.ones(s, s, dtype=torch.bool).triu(1)
    return _softmax((x * scale).masked_fill(above, float("-inf")), stable)


FORMULAS: dict[str, Callable[..., Any]] = {
    "triton2triton/llm/softmax": lambda ref, stable, x: _softmax(x, stable),
    "cuda2cuda/ops/softmax": lambda ref, stable, x: _softmax(x, stable),
    "triton2triton/llm/log_softmax": lambda ref, stable, x: x - _lse(x, stable)[..., None],
    "torch2triton/ops/logsumexp": lambda ref, stable, x: _lse(x, stable),
    "triton2triton/llm/cross_entropy": lambda ref, stable, x, t: (
        _lse(x, stable) - x.gather(1, t[:, None]).squeeze(1)
    ),
    "instruction2triton/spec/causal_softmax": lambda ref, stable, x: _causal(x, stable, ref.SCALE),
}
"""Per task: the operation in float32, with the max subtraction (``stable``) or without."""


@pytest.mark.parametrize("task", sorted(FORMULAS))
def test_skipping_the_max_subtraction_fails_on_every_case(task: str) -> None:
    ref, formula = reference_module(task), FORMULAS[task]
    for shape, dtype, tol in cases(task)[1]:
        for seed in range(3):
            inputs = ref.make_inputs(shape, getattr(torch, dtype), "cpu", seed)
            want = ref.reference(*inputs)
            as_f32 = [t.float() if t.is_floating_point() else t for t in inputs]
            where = f"{task} {shape} {dtype} seed {seed}"
            assert close(formula(ref, True, *as_f32), want, tol), f"stable misses: {where}"
            assert not close(formula(ref, False, *as_f32), want, tol), f"naive passes: {where}"
