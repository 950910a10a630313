"""Scoring and reward policies: one registry, pure functions of stored measurements.

Scoring turns an evaluation's measurements into :func:`components` (kept in every
``Scored`` event) and a score under a :class:`RewardPolicy`; exporting rewards
(:mod:`aka.stats.rewards`, ``aka export rewards --policy ...``) reshapes the same
components through the same registry, so a policy name means the same numbers in
``aka report`` and in a reward table. Every ``Scored`` event records the full policy
spec (:meth:`RewardPolicy.to_json`), so a stored score can always be recomputed.

Policies (version 2, the current one):
    agentkernelarena: 0 if it did not compile, 20 if it compiled but is wrong,
        120 + 100 x speedup if correct (AgentKernelArena's score), where speedup is the
        **geometric mean** over the timed shapes of baseline median / candidate median
        (AgentKernelArena averages per-case speedups arithmetically; an average of ratios
        must not reward one lucky shape more than it punishes a slow one).
    log_speedup: ln(max(speedup, floor)) if correct, else ln(floor); optional cap.
        Symmetric in speedup and slowdown, and it adds up over a trajectory the way
        the geometric mean of a report does.
    fast_p: the share of ``thresholds`` p with correct and speedup > p (KernelBench's
        fast_p); one threshold gives a 0/1 reward, several a staircase.

A hack flag gives the policy's failure reward unless ``zero_on_hack`` is false.
Version 1 (scores recorded before the registry was shared) is kept so old scores can be
recomputed: there ``log_speedup`` was ln(speedup) if correct and -1 otherwise, and a
hack-flagged candidate that compiled scored 20 under ``agentkernelarena``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from aka.errors import InputError

POLICY_VERSION = 2
"""The version of every policy that :func:`parse_policy` builds unless told otherwise."""


@dataclass(frozen=True)
class Measurements:
    """What scoring needs: compile/correct flags and per-shape speedups."""

    compiled: bool
    correct: bool
    speedups: Sequence[float] = ()
    hack_flags: Sequence[str] = ()


@dataclass(frozen=True)
class ScoreResult:
    """A score plus every component it was made from and the policy that made it."""

    score: float
    speedup: float | None
    components: dict[str, float]
    policy: RewardPolicy


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


@dataclass(frozen=True)
class Components:
    """The stored measurements a reward is shaped from (one evaluation of one candidate).

    Attributes:
        compiled: the candidate built.
        correct: it matched the reference on every shape.
        speedup: geometric mean over shapes of baseline time / candidate time; None
            unless correct.
        hack_flags: names of reward-hack checks that fired.
        baseline_time_s: the reference's time (sum over shapes), if measured.
        candidate_time_s: the candidate's time, if measured.
        speedup_ci_low: lower bound of the speedup's confidence interval.
        speedup_ci_high: upper bound.
        trials: timed trials behind the speedup.
    """

    compiled: bool
    correct: bool
    speedup: float | None = None
    hack_flags: tuple[str, ...] = ()
    baseline_time_s: float | None = None
    candidate_time_s: float | None = None
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    trials: int | None = None

    @property
    def log_speedup(self) -> float | None:
        """ln(speedup) when correct with a positive speedup, else None."""
        ok = self.correct and self.speedup is not None and self.speedup > 0
        return math.log(self.speedup) if ok and self.speedup is not None else None

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Components:
        """Build from a row or a components dict; unknown keys are ignored."""
        flags = values.get("hack_flags") or ()
        if isinstance(flags, str):
            flags = (flags,)
        trials = values.get("trials")
        return cls(
            compiled=bool(values.get("compiled") or False),
            correct=bool(values.get("correct") or False),
            speedup=_opt_float(values.get("speedup")),
            hack_flags=tuple(str(f) for f in flags),
            baseline_time_s=_opt_float(values.get("baseline_time_s")),
            candidate_time_s=_opt_float(values.get("candidate_time_s")),
            speedup_ci_low=_opt_float(values.get("speedup_ci_low")),
            speedup_ci_high=_opt_float(values.get("speedup_ci_high")),
            trials=None if trials is None else int(trials),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (hack flags as a list), the form exported as ``ground_truth``."""
        out = asdict(self)
        out["hack_flags"] = list(self.hack_flags)
        return out

    def to_json(self) -> str:
        """Canonical JSON (sorted keys): what a trainer's reward function parses."""
        return json.dumps(self.to_dict(), sort_keys=True)


def _opt_float(value: Any) -> float | None:
    if value is None:
        return None
    x = float(value)
    return None if math.isnan(x) else x


@dataclass(frozen=True)
class RewardPolicy:
    """A named reward policy with its parameters; see the module docstring.

    Attributes:
        name: which policy.
        floor: ``log_speedup`` only: speedup a failure counts as (and the least a
            correct candidate can get).
        cap: ``log_speedup`` only: speedup above which reward stops growing (None: no
            cap). A cap bounds what one lucky or exploited shape can earn.
        thresholds: ``fast_p`` only: the p values.
        zero_on_hack: give a candidate with any hack flag the policy's failure reward.
        version: which version of the named policy (:data:`POLICY_VERSION` unless a
            recorded spec says otherwise).
    """

    name: str = "agentkernelarena"
    floor: float = 0.5
    cap: float | None = None
    thresholds: tuple[float, ...] = (1.0,)
    zero_on_hack: bool = True
    version: int = POLICY_VERSION

    def to_json(self) -> str:
        """Canonical JSON of the policy (name and parameters), stored in each row."""
        out = asdict(self)
        out["thresholds"] = list(self.thresholds)
        return json.dumps(out, sort_keys=True)


def agentkernelarena(c: Components) -> float:
    """0 / 20 / 120 + 100 x speedup for not compiled / compiled but wrong / correct."""
    if not c.compiled:
        return 0.0
    if not c.correct or c.speedup is None:
        return 20.0
    return 120.0 + 100.0 * c.speedup


def log_speedup(c: Components, *, floor: float = 0.5, cap: float | None = None) -> float:
    """ln(speedup) clamped to [ln(floor), ln(cap)] if correct; ln(floor) otherwise."""
    if not c.correct or c.speedup is None:
        return math.log(floor)
    s = max(c.speedup, floor)
    return math.log(min(s, cap) if cap is not None else s)


def fast_p(c: Components, *, thresholds: tuple[float, ...] = (1.0,)) -> float:
    """Share of thresholds p with correct and speedup > p (strictly, as KernelBench)."""
    if not c.correct or c.speedup is None:
        return 0.0
    speedup = c.speedup
    return sum(1.0 for p in thresholds if speedup > p) / len(thresholds)


_FAILED = Components(compiled=False, correct=False)
"""What a hack-flagged candidate is scored as: the worst outcome of every policy."""


PolicyFn = Callable[[Components, RewardPolicy], float]
_POLICIES: dict[tuple[str, int], PolicyFn] = {}


def register_policy(name: str, version: int = POLICY_VERSION) -> Callable[[PolicyFn], PolicyFn]:
    """Register ``fn(components, policy) -> reward`` as version ``version`` of ``name``."""

    def deco(fn: PolicyFn) -> PolicyFn:
        _POLICIES[(name, version)] = fn
        return fn

    return deco


def unregister_policy(name: str) -> None:
    """Remove every version of ``name`` (a policy a test or a plugin registered for a while)."""
    for key in [k for k in _POLICIES if k[0] == name]:
        del _POLICIES[key]


def policy_names() -> tuple[str, ...]:
    """Every registered policy name, sorted."""
    return tuple(sorted({name for name, _ in _POLICIES}))


@register_policy("agentkernelarena", 1)
@register_policy("agentkernelarena", 2)
def _agentkernelarena(c: Components, p: RewardPolicy) -> float:
    return agentkernelarena(c)


@register_policy("log_speedup", 2)
def _log_speedup(c: Components, p: RewardPolicy) -> float:
    return log_speedup(c, floor=p.floor, cap=p.cap)


@register_policy("log_speedup", 1)
def _log_speedup_v1(c: Components, p: RewardPolicy) -> float:
    return c.log_speedup if c.log_speedup is not None else -1.0


@register_policy("fast_p", 1)
@register_policy("fast_p", 2)
def _fast_p(c: Components, p: RewardPolicy) -> float:
    return fast_p(c, thresholds=p.thresholds)


def shape_reward(components: Components | Mapping[str, Any], policy: RewardPolicy | str) -> float:
    """The reward of one evaluation under ``policy``.

    Args:
        components: a :class:`Components`, or a mapping with its keys (a row).
        policy: a :class:`RewardPolicy` or a spec accepted by :func:`parse_policy`.
    """
    c = components if isinstance(components, Components) else Components.from_mapping(components)
    p = parse_policy(policy)
    if p.zero_on_hack and c.hack_flags:
        c = _FAILED
    return float(_POLICIES[(p.name, p.version)](c, p))


def parse_policy(spec: RewardPolicy | str) -> RewardPolicy:
    """Read a policy from its JSON (:meth:`RewardPolicy.to_json`) or a short spec.

    Short specs: ``agentkernelarena``, ``log_speedup``, ``log_speedup:floor=0.25,cap=8``,
    ``fast_p:thresholds=1.0/1.5/2.0``, ``fast_p:zero_on_hack=false``.

    Raises:
        InputError: unknown policy name or parameter, or a value of the wrong form.
    """
    if isinstance(spec, RewardPolicy):
        return spec
    text = spec.strip()
    try:
        if text.startswith("{"):
            return _build(json.loads(text))
        name, _, params = text.partition(":")
        values: dict[str, Any] = {"name": name.strip()}
        for item in filter(None, (p.strip() for p in params.split(","))):
            key, eq, value = item.partition("=")
            if not eq:
                raise ValueError(f"parameter {item!r} is not key=value")
            values[key.strip()] = value.strip()
        return _build(values)
    except (ValueError, TypeError) as exc:
        raise InputError(
            f"bad reward policy {spec!r}: {exc}",
            fix=f"use one of {', '.join(policy_names())}, e.g. log_speedup:floor=0.5,cap=10",
        ) from exc


def _build(values: Mapping[str, Any]) -> RewardPolicy:
    name = values.get("name")
    if name not in policy_names():
        raise ValueError(f"unknown policy {name!r}")
    unknown = set(values) - {"name", "floor", "cap", "thresholds", "zero_on_hack", "version"}
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(sorted(unknown))}")
    thresholds = values.get("thresholds", (1.0,))
    if isinstance(thresholds, str):
        thresholds = thresholds.split("/")
    cap = values.get("cap")
    floor = float(values.get("floor", 0.5))
    if not 0 < floor <= 1:
        raise ValueError(f"floor must be in (0, 1], got {floor}")
    zero = values.get("zero_on_hack", True)
    if isinstance(zero, str):
        if zero.lower() not in ("true", "false"):
            raise ValueError(f"zero_on_hack must be true or false, got {zero!r}")
        zero = zero.lower() == "true"
    ts = tuple(float(t) for t in thresholds)
    if not ts:
        raise ValueError("fast_p needs at least one threshold")
    version = int(values.get("version", POLICY_VERSION))
    if (name, version) not in _POLICIES:
        raise ValueError(f"{name} has no version {version}")
    return RewardPolicy(
        name=name,
        version=version,
        floor=floor,
        cap=None if cap in (None, "", "none") else float(cap),
        thresholds=ts,
        zero_on_hack=bool(zero),
    )


def score(m: Measurements, policy: RewardPolicy | str = "agentkernelarena") -> ScoreResult:
    """Score measurements under ``policy`` (a :class:`RewardPolicy` or a spec); pure."""
    comps = components(m)
    p = parse_policy(policy)
    reward = Components(
        compiled=m.compiled,
        correct=bool(comps["correct"]),
        speedup=comps.get("speedup"),
        hack_flags=tuple(m.hack_flags),
    )
    return ScoreResult(
        score=shape_reward(reward, p), speedup=comps.get("speedup"), components=comps, policy=p
    )
