"""Tasks draw inputs on which the cheapest numerically unsafe shortcut fails.

Like the max subtraction of ``test_stable_inputs.py``: a kernel that skips a step the
operation needs only on some inputs (the epsilon of a norm, a two-pass variance, a clamp,
a tie rule, the mask's real positions) is judged correct unless ``make_inputs`` reaches
those inputs. Each task below plants them in a random part of every input set (rows
whose RMS is near the epsilon, rows with a large mean for their spread, scores past
float32's ``exp`` range, exact ties at the top-K boundary, left-padded rows, all-negative
rows, zero rows). So on every case, the honest formula in float32 meets the task's
tolerance while the shortcut in float32 misses it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

torch = pytest.importorskip("torch")
from task_inputs import cases, close, reference_module  # noqa: E402  (needs torch)


def _rms_norm(h: Any, w: Any, eps: float, how: str) -> Any:
    ms = h.pow(2).mean(-1, keepdim=True)
    if how == "honest":
        return h / torch.sqrt(ms + eps) * w
    if how == "no eps":
        return h / torch.sqrt(ms) * w
    return h / (torch.sqrt(ms) + eps) * w  # eps outside the sqrt


def _layer_norm(x: Any, w: Any, b: Any, how: str) -> Any:
    mean = x.mean(-1, keepdim=True)
    if how == "one-pass variance":
        var = (x * x).mean(-1, keepdim=True) - mean * mean
    else:
        var = (x - mean).pow(2).mean(-1, keepdim=True)
    eps = 0.0 if how == "no eps" else 1e-5
    return (x - mean) / torch.sqrt(var.clamp_min(0) + eps) * w + b


def _gelu_tanh(x: Any, how: str) -> Any:
    u = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
    if how == "honest":
        t = torch.tanh(u)
    else:  # tanh from exp(2u)
        e = torch.exp(2.0 * u)
        t = (e - 1.0) / (e + 1.0)
    return 0.5 * x * (1.0 + t)


def _log_softmax(x: Any, stable: bool) -> Any:
    m = x.amax(-1, keepdim=True) if stable else torch.zeros_like(x[..., :1])
    return x - m - torch.log(torch.exp(x - m).sum(-1, keepdim=True))


def _kl(t: Any, s: Any, stable: bool) -> Any:
    lp, lq = _log_softmax(t, stable), _log_softmax(s, stable)
    return (lp.exp() * (lp - lq)).sum(-1)


def _router(x: Any, k: int, how: str) -> Any:
    if how == "higher index wins ties":
        order = (
            x.shape[-1] - 1 - torch.sort(x.flip(-1), dim=-1, descending=True, stable=True).indices
        )
    else:
        order = torch.sort(x, dim=-1, descending=True, stable=True).indices
    keep = torch.zeros_like(x).scatter(1, order[:, :k], 1.0)
    shift = torch.zeros_like(x[:, :1]) if how == "no max subtraction" else x.amax(-1, keepdim=True)
    w = torch.exp(x - shift) * keep
    return w / w.sum(-1, keepdim=True)


def _pool(h: Any, mask: Any, how: str) -> Any:
    m = mask.double()[:, :, None].float()
    if how == "honest":
        return (h * m).sum(1) / m.sum(1)
    first = (torch.arange(h.shape[1])[None, :] < mask.sum(1)[:, None]).float()[:, :, None]
    return (h * first).sum(1) / m.sum(1)  # the first sum(mask) positions


def _argmax(x: Any, how: str) -> Any:
    i = x.argmax(-1)
    if how == "running max from 0":
        i = torch.where(x.amax(-1) > 0, i, torch.zeros_like(i))
    return i.double()


def _l2(x: Any, how: str) -> Any:
    norm = x.norm(dim=-1, keepdim=True)
    return x / (norm.clamp_min(1e-12) if how == "honest" else norm)


Formula = Callable[..., Any]


class Shortcut(NamedTuple):
    task: str
    name: str
    formula: Formula  # (how, shape, *inputs in float32) -> output; how is "honest" or name
    dtypes: tuple[str, ...] = ()  # where the shortcut must fail; () for all the task's
    several_rows: bool = False  # only where shape["M"] > 1


def _norm(eps: float) -> Formula:
    return lambda how, shape, x, w: _rms_norm(x, w, eps, how)


SHORTCUTS = [
    *(
        Shortcut(t, how, _norm(1e-6))
        for t in ("triton2triton/llm/rms_norm", "cuda2cuda/ops/rms_norm")
        for how in ("no eps", "eps outside sqrt")
    ),
    *(
        Shortcut(
            "triton2triton/llm/fused_add_rms_norm",
            how,
            lambda how, shape, x, r, w: _rms_norm(x + r, w, 1e-6, how),
        )
        for how in ("no eps", "eps outside sqrt")
    ),
    *(
        Shortcut(
            "instruction2triton/spec/gated_rms_norm",
            how,
            lambda how, shape, x, z, w: _rms_norm(x * z * torch.sigmoid(z), w, 1e-5, how),
        )
        for how in ("no eps", "eps outside sqrt")
    ),
    *(
        Shortcut(t, "no eps", lambda how, shape, *a: _layer_norm(*a, how))
        for t in ("triton2triton/llm/layer_norm", "torch2cuda/ops/layer_norm")
    ),
    # In half precision the tolerance, not the inputs, decides: only float32 must fail.
    *(
        Shortcut(t, "one-pass variance", lambda how, shape, *a: _layer_norm(*a, how), ("float32",))
        for t in ("triton2triton/llm/layer_norm", "torch2cuda/ops/layer_norm")
    ),
    Shortcut(
        "torch2triton/ops/gelu_tanh", "tanh from exp", lambda how, shape, x: _gelu_tanh(x, how)
    ),
    Shortcut(
        "torch2triton/ops/kl_div",
        "no max subtraction",
        lambda how, shape, t, s: _kl(t, s, how == "honest"),
    ),
    *(
        Shortcut(
            "instruction2triton/spec/moe_router_topk",
            how,
            lambda how, shape, x: _router(x, shape["K"], how),
        )
        for how in ("no max subtraction", "higher index wins ties")
    ),
    Shortcut(
        "torch2triton/ops/masked_mean_pool",
        "first sum(mask) positions",
        lambda how, shape, h, m: _pool(h, m, how),
    ),
    Shortcut(
        "triton2triton/llm/argmax", "running max from 0", lambda how, shape, x: _argmax(x, how)
    ),
    Shortcut(
        "torch2triton/ops/l2_normalize",
        "no clamp",
        lambda how, shape, x: _l2(x, how),
        several_rows=True,
    ),
]


@pytest.mark.parametrize("cut", SHORTCUTS, ids=lambda c: f"{c.task}:{c.name}")
def test_the_shortcut_fails_on_every_case(cut: Shortcut) -> None:
    ref = reference_module(cut.task)
    spec, every = cases(cut.task)
    checked = 0
    for shape, dtype, tol in every:
        for seed in range(3):
            inputs = ref.make_inputs(shape, getattr(torch, dtype), "cpu", seed)
            want = ref.reference(*inputs, **(shape if spec.get("pass_shape") else {}))
            as_f32 = [t.float() if t.is_floating_point() else t for t in inputs]
            where = f"{cut.task} {shape} {dtype} seed {seed}"
            assert close(cut.formula("honest", shape, *as_f32), want, tol), (
                f"honest misses: {where}"
            )
            if (cut.dtypes and dtype not in cut.dtypes) or (cut.several_rows and shape["M"] < 2):
                continue
            checked += 1
            shortcut = cut.formula(cut.name, shape, *as_f32)
            assert not close(shortcut, want, tol), f"{cut.name} passes: {where}"
    assert checked, f"no case checks {cut.name} on {cut.task}"
