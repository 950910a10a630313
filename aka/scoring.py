"""Scoring: a pure function of measurements, with every component kept.

The default policy is AgentKernelArena's, so scores are comparable with that arena:

- 0 if the candidate does not compile (or does not launch);
- 20 if it compiles but any correctness case fails or a hack detector fires;
- 120 + 100 × speedup if it is correct, where speedup is the **geometric mean** over
  the timed shapes of baseline median / candidate median (AgentKernelArena averages
  per-case speedups arithmetically; the geometric mean is used here because a ratio's
  average must not reward one lucky shape more than it punishes a slow one).

``log_speedup`` scores log(speedup) for correct candidates and a fixed penalty
otherwise; ``fast_p`` scores 1 when correct and faster than p (default 1.0).
The components dict holds every input, so any policy can be re-applied to stored
events without a GPU (``aka export rewards --policy ...``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

POLICY_VERSION = 1
LOG_FAIL_PENALTY = -1.0


@dataclass(frozen=True)
class Measurements:
    """What scoring needs: compile/correct flags and per-shape speedups."""

    compiled: bool
    correct: bool
    speedups: Sequence[float] = ()
    hack_flags: Sequence[str] = ()


@dataclass(frozen=True)
class ScoreResult:
    """A score plus every component it was made from."""

    score: float
    speedup: float | None
    components: dict[str, float]


def geomean(values: Sequence[float]) -> float:
    """Geometric mean of positive values (the aggregate speedup across shapes)."""
    if not values or any(v <= 0 or not math.isfinite(v) for v in values):
        raise ValueError("geomean needs positive finite values")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def components(m: Measurements) -> dict[str, float]:
    """The stored components: flags as 0/1 and the aggregate speedup when correct."""
    ok = m.compiled and m.correct and not m.hack_flags and bool(m.speedups)
    out = {
        "compiled": float(m.compiled),
        "correct": float(m.correct and not m.hack_flags),
        "hacked": float(bool(m.hack_flags)),
        "shapes_timed": float(len(m.speedups)),
    }
    if ok:
        sp = geomean(m.speedups)
        out.update(
            speedup=sp,
            log_speedup=math.log(sp),
            min_shape_speedup=min(m.speedups),
            max_shape_speedup=max(m.speedups),
        )
    return out


def _agentkernelarena(c: dict[str, float]) -> float:
    if not c["compiled"]:
        return 0.0
    if "speedup" not in c:
        return 20.0
    return 120.0 + 100.0 * c["speedup"]


def _log_speedup(c: dict[str, float]) -> float:
    return c.get("log_speedup", LOG_FAIL_PENALTY)


def _fast_p(c: dict[str, float], p: float = 1.0) -> float:
    return 1.0 if c.get("speedup", 0.0) > p else 0.0


POLICIES: dict[str, Callable[[dict[str, float]], float]] = {
    "agentkernelarena": _agentkernelarena,
    "log_speedup": _log_speedup,
    "fast_p": _fast_p,
}


def apply_policy(policy: str, comps: dict[str, float]) -> float:
    """Re-score stored components under ``policy`` (no GPU needed)."""
    try:
        fn = POLICIES[policy]
    except KeyError:
        raise ValueError(f"unknown scoring policy {policy!r}; known: {sorted(POLICIES)}") from None
    return fn(comps)


def score(m: Measurements, policy: str = "agentkernelarena") -> ScoreResult:
    """Score measurements under ``policy``; pure."""
    comps = components(m)
    return ScoreResult(
        score=apply_policy(policy, comps), speedup=comps.get("speedup"), components=comps
    )
