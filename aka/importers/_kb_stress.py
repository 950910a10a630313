"""The held-out stress cases of an imported KernelBench problem, probed on the CPU.

Upstream draws most inputs from [0, 1) or a standard normal. On those, kernels that are
numerically unsafe where the problem's own code is not are judged correct, by
KernelBench's own harness too: a softmax or a log-sum-exp without its max pass, a
softplus or a tanh written with a bare ``exp`` (float32's ``exp`` overflows above about
88), a norm whose variance is ``E[x^2] - E[x]^2`` in one pass (it cancels catastrophically
once the mean is large beside the spread). Two held-out cases draw inputs where those
break and honest float32 does not:

- **scaled** (:data:`SCALED_KEY`): chosen inputs multiplied, by the largest of
  :data:`SCALES`;
- **shifted** (:data:`SHIFTED_KEY`): chosen inputs moved, by the largest of
  :data:`SHIFTS`;
- **negated** (:data:`NEGATED_KEY`): inputs drawn non-negative (upstream's ``torch.rand``)
  multiplied by the largest negative factor of :data:`NEGATIONS`. Scaling alone keeps them
  non-negative, so a kernel that overflows only for large negative inputs (a tanh written
  with ``exp(-2x)``, a softplus as ``x + log(1 + exp(-x))``) would pass it.

Each input gets the largest value at which the problem's own float32 forward stays finite
and within a share of the tolerance (:data:`SCALE_MARGIN`, :data:`SHIFT_MARGIN`) of its
float64 reference on every CPU shape and two seeds whose outputs differ, with no answer
validation rejects passing there, alone and then with the others (if together they fail,
only the input with the largest value is kept).
A problem whose float32 code takes no value (an ``exp`` of its input) gets no such case.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from aka.importers._kb_loader import _float64, _forward, _inputs, _loaded, _placed
from aka.importers._kb_sizes import Shape
from aka.tasks import VARIANT_PREFIX
from aka.tolerance import repeats

SCALED_KEY = f"{VARIANT_PREFIX}stressed"
"""The key of the held-out shape whose inputs the reference multiplies (``INPUT_STRESS``)."""
SHIFTED_KEY = f"{VARIANT_PREFIX}shifted"
"""The key of the held-out shape whose inputs the reference moves (``INPUT_SHIFT``)."""
NEGATED_KEY = f"{VARIANT_PREFIX}negated"
"""The key of the held-out shape whose non-negative inputs the reference multiplies by a
negative factor (``INPUT_NEGATE``)."""

SCALES = (1000.0, 100.0, 10.0)
"""Factors tried, largest first: a bare ``exp`` of [0, 1000) overflows in float32."""
SHIFTS = (1000.0, 300.0, 100.0, 30.0, 10.0)
"""Offsets tried, largest first. A one-pass variance of [0, 1) + 30 misses float32's
tolerance about ten times over where the two-pass one uses a tenth of it; finer steps
than the factors', since honest float32 loses precision as the offset grows."""
NEGATIONS = tuple(-v for v in SCALES)
"""Factors tried on inputs drawn non-negative, largest magnitude first."""
SCALE_MARGIN = 0.5
"""The share of the tolerance the problem's own float32 output may use on scaled inputs:
GPU libraries round differently from the CPU's, and a case the CPU's float32 only just
passes could fail an honest GPU baseline. Scaling leaves relative errors alone for most
operations, so half is enough."""
SHIFT_MARGIN = 0.25
"""As :data:`SCALE_MARGIN`, for shifted inputs: honest float32's error on them grows with
the length of the reductions, longer on the GPU's shapes than on the CPU's."""
SECONDS = 20.0
"""The probe's time on one problem; one that takes longer gets no stress case."""

Move = Callable[[Any, float], Any]


def _times(x: Any, v: float) -> Any:
    return x * v


def _plus(x: Any, v: float) -> Any:
    return x + v


class Case(NamedTuple):
    """One kind of held-out stress case."""

    name: str
    """Its name in the CPU run's result and in the task's plan."""
    key: str
    """The held-out shape's key that turns it on."""
    table: str
    """The table of ``reference.py`` that holds its values, input by input."""
    how: str
    """What it does to an input, in the words of the import line (``input 0 {how} 10``)."""
    values: tuple[float, ...]
    """The values tried, the first that holds wins."""
    margin: float
    """The share of the tolerance the problem's own float32 code may use on it."""
    move: Move
    """How an input moves (the template's ``make_inputs`` does the same)."""
    non_negative: bool = False
    """Tried only on inputs drawn non-negative."""


CASES: tuple[Case, ...] = (
    Case("stressed", SCALED_KEY, "INPUT_STRESS", "multiplied by", SCALES, SCALE_MARGIN, _times),
    Case("shifted", SHIFTED_KEY, "INPUT_SHIFT", "plus", SHIFTS, SHIFT_MARGIN, _plus),
    Case("negated", NEGATED_KEY, "INPUT_NEGATE", "multiplied by", NEGATIONS, SCALE_MARGIN,
         _times, non_negative=True),
)  # fmt: skip
"""Every kind of stress case, in the order their held-out shapes follow the plain one."""


def _float32(module: Any) -> Any:
    """The problem's Model in float32, as its own code runs (built under the weight seed)."""
    with _loaded()["seeded"](0), _placed("cpu"):
        return module.Model(*module.get_init_inputs()).eval()


def _outputs(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def within(got: Any, want: Any, share: float, tol: dict[str, float]) -> bool:
    """Whether every output of ``got`` (float32) passes ``share`` of ``tol`` against the
    finite floating output of ``want`` (float64): validation's rule (:func:`aka.kinds.passes`)
    with every part of the tolerance scaled by ``share``."""
    import torch

    from aka.kinds import passes
    from aka.tasks import Tolerance

    rule = Tolerance(**{k: share * float(v) for k, v in tol.items()})
    gots, wants = _outputs(got), _outputs(want)
    if not wants or len(gots) != len(wants):
        return False
    return all(
        isinstance(b, torch.Tensor) and b.is_floating_point()
        and bool(torch.isfinite(b).all()) and passes(a, b, rule)
        for a, b in zip(gots, wants, strict=True)
    )  # fmt: skip


def _moved(inputs: list[Any], values: dict[int, float], move: Move) -> tuple[list[Any], list[Any]]:
    """``inputs`` with those in ``values`` moved, rounded to float32 as the task draws
    them: the float32 arguments and the same values in float64."""
    import torch

    low = [move(x, values[i]) if i in values else x for i, x in enumerate(inputs)]
    low = [x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in low]
    high = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in low]
    return low, high


class _Trials:
    """The problem's float32 and float64 models and two draws of inputs per CPU shape."""

    def __init__(
        self, load: Any, path: Path, shapes: list[Shape], widened: dict[int, tuple[float, float]]
    ) -> None:
        self.deadline = time.monotonic() + SECONDS
        self.runs: list[tuple[Any, Any, list[list[Any]]]] = []
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
            self.runs.append((_float32(module), model64, draws))

    def floats(self, non_negative: bool = False) -> list[int]:
        """The indices of the floating inputs (those a case may move); with
        ``non_negative``, only those no draw gives a negative value."""
        import torch

        first = self.runs[0][2][0] if self.runs else []
        found = [
            i for i, x in enumerate(first)
            if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel()
        ]  # fmt: skip
        if non_negative:
            draws = [inputs for *_, pairs in self.runs for inputs in pairs]
            found = [i for i in found if all(bool((d[i] >= 0).all()) for d in draws)]
        return found

    def hold(
        self, values: dict[int, float], move: Move, margin: float, tol: dict[str, float]
    ) -> bool:
        """Float32 within the margin on every draw, the output still moving with the seed
        (large inputs can saturate it: a group norm over two features gives +-1), and, for
        moved inputs, no null answer passing (:func:`_weak`)."""
        import torch

        for model32, model64, draws in self.runs:
            wants = []
            for inputs in draws:
                if time.monotonic() > self.deadline:
                    raise TimeoutError
                args32, args64 = _moved(inputs, values, move)
                with torch.no_grad(), _placed("cpu"):
                    got = model32(*args32)
                wants.append(_forward(model64, args64))
                if not within(got, wants[-1], margin, tol):
                    return False
                if values and _weak(args32, wants[-1], tol):
                    return False
            if repeats(*wants):
                return False
        return True


def _weak(inputs: list[Any], want: Any, tol: dict[str, float]) -> bool:
    """Whether an answer validation rejects passes on this case: zeros, garbage, a copy of
    an input (a ReLU of inputs moved far above zero returns them), bfloat16's precision
    (:mod:`aka.kinds`, as validation judges them). A case on which one passes checks nothing a kernel
    could get wrong there, and would fail the task's validation."""
    import torch

    from aka.kinds import downgrade_passes, null_answers, passes
    from aka.tasks import Tolerance

    if not isinstance(want, torch.Tensor):
        return False
    rule = Tolerance(**tol)
    nulls = null_answers(tuple(inputs), want, 0).values()
    return any(passes(n, want, rule) for n in nulls) or downgrade_passes(want, rule)


def _pick(trials: _Trials, case: Case, tol: dict[str, float]) -> dict[int, float]:
    """Each floating input's first value of the case's ladder that holds alone, then
    together (the largest in magnitude where they do not)."""
    picks: dict[int, float] = {}

    def hold(values: dict[int, float]) -> bool:
        return trials.hold(values, case.move, case.margin, tol)

    for i in trials.floats(case.non_negative):
        picks |= next(({i: v} for v in case.values if hold({i: v})), {})
    if len(picks) > 1 and not hold(picks):
        top = max(picks, key=lambda i: abs(picks[i]))
        picks = {top: picks[top]}
    return picks


def stress_cases(
    load: Any,
    path: Path,
    shapes: list[Shape],
    widened: dict[int, tuple[float, float]],
    tol: dict[str, float],
) -> dict[str, list[list[float]]]:
    """``{"stressed": [[input, factor], ...], "shifted": [[input, offset], ...], ...}``
    (:data:`CASES`) for the problem at ``path`` on its CPU ``shapes`` (inputs ``widened`` as the task draws them);
    empty lists where float32 already misses the margin on upstream's inputs, where the
    float32 model fails, or when the probe runs out of time."""
    found: dict[str, list[list[float]]] = {case.name: [] for case in CASES}
    try:
        trials = _Trials(load, path, shapes, widened)
        if not trials.hold({}, _times, min(case.margin for case in CASES), tol):
            return found
        for case in CASES:
            found[case.name] = [[i, v] for i, v in _pick(trials, case, tol).items()]
    except TimeoutError:
        pass  # the cases probed in time stand
    except Exception:  # the float32 model fails where float64 ran: no stress case
        return {case.name: [] for case in CASES}
    return found
