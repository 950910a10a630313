"""Which arm runs first in each round, and when to stop sampling. Pure functions.

Interleaving: baseline (A) and candidate (B) alternate within every round, so slow drift
(clocks, temperature, a neighbour's load) hits both arms alike. Going first can itself
cost or gain (a warmer cache, a clock ramp), so the order inside a round is random but
balanced: rounds come in blocks of two, one ``AB`` and one ``BA`` in random order, so
after any even number of rounds each arm went first exactly half the time.

Stop rule: sample until the confidence interval of BOTH medians is narrow relative to
the median (default 0.5 %, the bar nvbench uses), or a budget (time, samples) is spent.
The rule looks only at precision, never at the difference between arms, so stopping
early cannot manufacture a difference.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from aka.timing._stats import rel_halfwidth

__all__ = ["StopDecision", "interleaved_orders", "iter_orders", "stop_decision"]

Order = tuple[Literal[0, 1], Literal[0, 1]]
_AB: Order = (0, 1)
_BA: Order = (1, 0)


def iter_orders(seed: int) -> Iterator[Order]:
    """Endless balanced random orders: ``(0, 1)`` is A then B, ``(1, 0)`` is B then A."""
    rng = random.Random(seed)
    while True:
        block = [_AB, _BA]
        rng.shuffle(block)
        yield from block


def interleaved_orders(n_rounds: int, seed: int = 0) -> list[Order]:
    """The first ``n_rounds`` orders of :func:`iter_orders` (deterministic per seed)."""
    it = iter_orders(seed)
    return [next(it) for _ in range(n_rounds)]


StopReason = Literal["converged", "time_budget", "max_samples"]


@dataclass(frozen=True)
class StopDecision:
    """Outcome of one stop check.

    Attributes:
        stop: whether to stop sampling now.
        reason: why (``None`` while sampling continues).
        rel_halfwidths: relative CI half-width of each arm's median at this check.
    """

    stop: bool
    reason: StopReason | None
    rel_halfwidths: tuple[float, float]


def stop_decision(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    target_rel_ci: float,
    elapsed_s: float,
    max_time_s: float,
    min_samples: int,
    max_samples: int,
    level: float = 0.95,
    resolution: float = 0.0,
) -> StopDecision:
    """Decide whether to stop: converged, out of time, or out of samples.

    ``min_samples`` is honoured before anything else except ``max_samples`` (so a tiny
    ``max_time_s`` still yields a usable minimum); convergence needs both arms under
    ``target_rel_ci``. ``resolution`` widens each CI by half a timer step, so a timer too
    coarse for the target never reports convergence it cannot have.
    """
    n = min(len(baseline), len(candidate))
    widths = (
        rel_halfwidth(baseline, level, resolution),
        rel_halfwidth(candidate, level, resolution),
    )
    if n >= max_samples:
        return StopDecision(True, "max_samples", widths)
    if n < min_samples:
        return StopDecision(False, None, widths)
    if max(widths) <= target_rel_ci:
        return StopDecision(True, "converged", widths)
    if elapsed_s >= max_time_s:
        return StopDecision(True, "time_budget", widths)
    return StopDecision(False, None, widths)
