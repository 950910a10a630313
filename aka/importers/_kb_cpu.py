"""A KernelBench problem run for real, in float64 on the CPU, as its reference runs it.

Only here does the problem compute: each CPU shape's forward must finish within
:data:`CPU_SECONDS` and repeat on the same inputs (else :data:`RANDOM_FORWARD`), a shape
whose output ignores the inputs is told (:func:`depends_on_inputs`), and an input on
which a copy would be a correct answer is widened (:func:`widened_inputs`), all judged at
the imported task's :data:`TOLERANCE`; the held-out stress cases are probed here too
(:mod:`aka.importers._kb_stress`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from aka.importers._kb_loader import _float64, _forward, _inputs, _loaded, _loader
from aka.importers._kb_sizes import Shape
from aka.importers._kb_stress import stress_cases
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


RANDOM_FORWARD = (
    "two forwards on the same inputs differ: the forward draws random numbers (an initial "
    "state made with torch.randn in forward), so no output can be checked against it"
)
"""Why a problem whose forward is random cannot be a task, whatever the device."""


def run_on_cpu(path: Path, shapes: list[Shape]) -> dict[str, Any]:
    """Each shape's float64 forward on the CPU, as the reference runs it: seconds or the
    error, which inputs to widen (:func:`widened_inputs`, from the first shape), and the
    held-out stress cases (:func:`aka.importers._kb_stress.stress_cases`, over every shape)."""

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
    return {
        "seconds": seconds,
        "widened": [[i, lo, hi] for i, (lo, hi) in widened.items()],
        **stress_cases(load, path, shapes, widened, TOLERANCE),
    }
