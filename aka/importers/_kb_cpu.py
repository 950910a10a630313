"""A KernelBench problem run for real, in float64 on the CPU, as its reference runs it.

Only here does the problem compute: each CPU shape's forward must finish within
:data:`CPU_SECONDS` and repeat on the same inputs (else :data:`RANDOM_FORWARD`), a shape
whose output ignores the inputs is told (:func:`depends_on_inputs`), and an input on
which a copy would be a correct answer is widened (:func:`widened_inputs`), and inputs are
scaled as far as the problem's own float32 code still meets the tolerance
(:func:`stressed_inputs`, the held-out checks' stress case), all judged at the imported
task's :data:`TOLERANCE`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from aka.importers._kb_loader import _float64, _forward, _inputs, _loaded, _loader, _placed
from aka.importers._kb_sizes import Shape
from aka.tolerance import effective_atol, repeats, rms

TOLERANCE = {"atol": 0.0, "rtol": 1e-4, "rms_atol": 1e-4}
"""The float32 tolerance of an imported problem (:mod:`aka.tolerance`). Its absolute part
follows the output's scale: KernelBench outputs range from ~1e-5 (a softmax over 24576
columns, a norm over millions of elements) to ~1e3 (a matmul), and one absolute atol
either lets zeros pass the first or fails honest float32 on the second."""
CPU_SECONDS = 5.0
"""A CPU shape whose float64 forward takes longer than this makes the task GPU-only."""


def depends_on_inputs(load: Any, path: Path, shape: Shape) -> bool:
    """Whether the problem's float64 output at ``shape`` (a CPU shape) changes with the
    seed its inputs are drawn from (:func:`aka.tolerance.repeats`); a shape that fails to
    run answers True (it is rejected elsewhere)."""

    outs = []
    try:
        module = load(shape, path)
        with _loaded()["seeded"](0):
            model = _float64(module)
        for seed in (0, 1):
            outs.append(_forward(model, _inputs(module, seed)))
    except Exception:
        return True
    return not repeats(*outs)


def _copy_passes(x: Any, out: Any) -> bool:
    """Whether returning input ``x`` as it is passes :data:`TOLERANCE` against ``out``."""
    import torch

    if not isinstance(out, torch.Tensor) or x.numel() != out.numel() or not out.numel():
        return False
    r = out.detach().double()
    atol = effective_atol(TOLERANCE, rms(r))
    return bool(torch.allclose(x.double().reshape(r.shape), r, atol=atol, rtol=TOLERANCE["rtol"]))


RANGES = ((-1.0, 1.0), (-4.0, 4.0))
"""Ranges tried, in order, for an input whose [0, 1) values make a copy of it correct:
[-1, 1) tells ReLU, ELU and their kin from a copy; a clamp to [-1, 1] (HardTanh) needs
values beyond it."""


def widened_inputs(model: Any, inputs: list[Any], out: Any) -> dict[int, tuple[float, float]]:
    """Inputs to draw from a wider range than upstream's [0, 1): index -> (low, high).

    ``torch.rand`` inputs are non-negative, so for ReLU, HardTanh, ELU and their kin the
    output *is* the input and copying it is a correct answer. Such an input (values in
    [0, 1], and copying it passes) is mapped to the first of :data:`RANGES` on which the
    output is finite and copying the input fails: the problem then tells a kernel from a
    copy. A problem that stays a copy on every range (a BatchNorm with fresh statistics)
    is left as it is, for validation to report.
    """
    import torch

    picks: dict[int, tuple[float, float]] = {}
    for i, x in enumerate(inputs):
        if not (isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel()):
            continue
        if float(x.min()) < 0 or float(x.max()) > 1 or not _copy_passes(x, out):
            continue
        for low, high in RANGES:
            moved = [*inputs[:i], low + (high - low) * x, *inputs[i + 1 :]]
            again = _forward(model, moved)
            if (
                isinstance(again, torch.Tensor)
                and bool(torch.isfinite(again).all())
                and not _copy_passes(moved[i], again)
            ):
                picks[i] = (low, high)
                break
    return picks


STRESS_SCALES = (1000.0, 100.0, 10.0)
"""Factors tried, largest first, for an input of the held-out stress case. Upstream draws
most inputs from [0, 1) or a standard normal, where a softmax or a log-sum-exp without
its max pass, a softplus or a tanh written with a bare ``exp``, stays finite; float32's
``exp`` overflows above about 88."""
STRESS_MARGIN = 0.5
"""The share of the tolerance the problem's own float32 output may use on a stressed
input: GPU libraries round differently from the CPU's, so a case the CPU's float32 only
just passes could fail an honest GPU baseline."""
STRESS_SECONDS = 20.0
"""The stress probe's time on one problem; one that takes longer adds no stress case."""


def _float32(module: Any) -> Any:
    """The problem's Model in float32, as its own code runs (built under the weight seed)."""
    with _loaded()["seeded"](0), _placed("cpu"):
        return module.Model(*module.get_init_inputs()).eval()


def _outputs(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _within(got: Any, want: Any, share: float) -> bool:
    """Whether every output of ``got`` (float32) is finite and within ``share`` of
    :data:`TOLERANCE` of ``want`` (float64), element by element."""
    import torch

    pairs = list(zip(_outputs(got), _outputs(want), strict=False))
    if not pairs or len(pairs) != len(_outputs(want)):
        return False
    for a, b in pairs:
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.shape != b.shape or not b.is_floating_point():
            return False
        a, b = a.detach().double(), b.detach().double()
        if not (bool(torch.isfinite(a).all()) and bool(torch.isfinite(b).all())):
            return False
        bound = effective_atol(TOLERANCE, rms(b)) + TOLERANCE["rtol"] * b.abs()
        if not bool(((a - b).abs() <= share * bound).all()):
            return False
    return True


def _scaled(inputs: list[Any], scales: dict[int, float]) -> tuple[list[Any], list[Any]]:
    """``inputs`` with those in ``scales`` multiplied, rounded to float32 as the task
    draws them: the float32 arguments and the same values in float64."""
    import torch

    low = [x * scales[i] if i in scales else x for i, x in enumerate(inputs)]
    low = [x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in low]
    high = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in low]
    return low, high


def stressed_inputs(
    load: Any, path: Path, shapes: list[Shape], widened: dict[int, tuple[float, float]]
) -> dict[int, float]:
    """Inputs the held-out stress case multiplies: index -> the largest of
    :data:`STRESS_SCALES` at which the problem's own float32 forward stays finite and
    within :data:`STRESS_MARGIN` of the tolerance against its float64 reference, on every
    CPU shape and two seeds whose outputs differ, each input alone and then all together (only the one with
    the largest factor is kept if together they fail).

    Upstream's inputs are small, and a kernel that is numerically unsafe where the
    problem is not (a softmax without its max pass) is judged correct on them, by
    KernelBench's own harness too. The stress case checks the range where an honest
    float32 kernel is still right: a problem whose float32 code cannot take any of the
    factors (an ``exp`` of its input, a ``log`` needing positive values) gets none.
    """
    import torch

    deadline = time.monotonic() + STRESS_SECONDS
    trials = []
    for shape in shapes:
        module = load(shape, path)
        with _loaded()["seeded"](0):
            model64 = _float64(module)
        draws = []
        for seed in (0, 1):
            inputs = _inputs(module, seed)
            for i, (low, high) in widened.items():
                inputs[i] = low + (high - low) * inputs[i]
            draws.append(inputs)
        trials.append((_float32(module), model64, draws))

    def holds(scales: dict[int, float]) -> bool:
        """Float32 within the margin on every draw, and the output still moving with the
        seed (large inputs can saturate it: a group norm over two features gives +-1)."""
        for model32, model64, draws in trials:
            wants = []
            for inputs in draws:
                if time.monotonic() > deadline:
                    raise TimeoutError
                args32, args64 = _scaled(inputs, scales)
                with torch.no_grad(), _placed("cpu"):
                    got = model32(*args32)
                wants.append(_forward(model64, args64))
                if not _within(got, wants[-1], STRESS_MARGIN):
                    return False
            if repeats(*wants):
                return False
        return True

    floats = [
        i for i, x in enumerate(trials[0][2][0] if trials else ())
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel()
    ]  # fmt: skip
    picks: dict[int, float] = {}
    try:
        if not holds({}):
            return {}
        for i in floats:
            picks |= next(({i: s} for s in STRESS_SCALES if holds({i: s})), {})
        if len(picks) > 1 and not holds(picks):
            top = max(picks, key=lambda i: picks[i])
            picks = {top: picks[top]}
    except TimeoutError:
        return {}
    return picks


RANDOM_FORWARD = (
    "two forwards on the same inputs differ: the forward draws random numbers (an initial "
    "state made with torch.randn in forward), so no output can be checked against it"
)
"""Why a problem whose forward is random cannot be a task, whatever the device."""


def run_on_cpu(path: Path, shapes: list[Shape]) -> dict[str, Any]:
    """Each shape's float64 forward on the CPU, as the reference runs it: seconds or the
    error, which inputs to widen (:func:`widened_inputs`, from the first shape) and to
    stress (:func:`stressed_inputs`, over every shape)."""

    load = _loader()
    seconds: list[float] = []
    widened: dict[int, tuple[float, float]] = {}
    for shape in shapes:
        try:
            module = load(shape, path)
            inputs = _inputs(module, 0)
            with _loaded()["seeded"](0):
                model = _float64(module)
            t0 = time.perf_counter()
            out = _forward(model, inputs)
            seconds.append(time.perf_counter() - t0)
            if not repeats(out, _forward(model, inputs)):
                return {"error": f"at {shape}: {RANDOM_FORWARD}"}
            if len(seconds) == 1:
                widened = widened_inputs(model, inputs, out)
        except Exception as exc:
            return {"error": f"at {shape}: {type(exc).__name__}: {exc}"[:300]}
        if seconds[-1] > CPU_SECONDS:
            return {"error": f"at {shape}: one float64 forward took {seconds[-1]:.1f} s"}
    try:
        stressed = stressed_inputs(load, path, shapes, widened)
    except Exception:  # the float32 model fails where float64 ran: no stress case
        stressed = {}
    return {
        "seconds": seconds,
        "widened": [[i, lo, hi] for i, (lo, hi) in widened.items()],
        "stressed": [[i, scale] for i, scale in stressed.items()],
    }
