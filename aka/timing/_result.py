"""Results: the statistics of one arm and of a measured pair, with everything needed to
judge them later (method, sample count, CI, device, raw samples)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aka.timing._stats import median_ci

__all__ = ["PairTiming", "SampleStats", "summarize"]


@dataclass(frozen=True)
class SampleStats:
    """One arm's samples and their summary, in seconds.

    Attributes:
        median_s: sample median (the reported time).
        ci_low_s: lower end of the median's CI (order statistics, widened by half a
            timer step).
        ci_high_s: upper end of that CI.
        mean_s: sample mean (kept for comparison with mean-based tools).
        std_s: sample standard deviation (ddof=1; 0 for one sample).
        n: number of samples.
        min_s: fastest sample.
        samples_s: every sample, in the order taken.
    """

    median_s: float
    ci_low_s: float
    ci_high_s: float
    mean_s: float
    std_s: float
    n: int
    min_s: float
    samples_s: tuple[float, ...] = field(repr=False)

    @property
    def rel_ci_halfwidth(self) -> float:
        """CI half-width relative to the median (the stop rule's quantity)."""
        if self.median_s <= 0.0:
            return math.inf
        return (self.ci_high_s - self.ci_low_s) / 2.0 / self.median_s

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form; ``samples_s`` becomes a list."""
        return {
            "median_s": self.median_s,
            "ci_low_s": self.ci_low_s,
            "ci_high_s": self.ci_high_s,
            "mean_s": self.mean_s,
            "std_s": self.std_s,
            "n": self.n,
            "min_s": self.min_s,
            "rel_ci_halfwidth": self.rel_ci_halfwidth,
            "samples_s": list(self.samples_s),
        }


def summarize(
    samples: Sequence[float], level: float = 0.95, resolution: float = 0.0
) -> SampleStats:
    """Build :class:`SampleStats` from raw samples (seconds)."""
    x = np.asarray(samples, dtype=float)
    med, lo, hi = median_ci(x, level, resolution)
    return SampleStats(
        median_s=med,
        ci_low_s=lo,
        ci_high_s=hi,
        mean_s=float(x.mean()),
        std_s=float(x.std(ddof=1)) if x.size > 1 else 0.0,
        n=int(x.size),
        min_s=float(x.min()),
        samples_s=tuple(float(v) for v in x),
    )


@dataclass(frozen=True)
class PairTiming:
    """A measured baseline/candidate pair.

    Attributes:
        baseline: the baseline arm.
        candidate: the candidate arm.
        speedup: ``baseline.median_s / candidate.median_s`` (> 1: candidate faster).
        speedup_ci: bootstrap CI of ``speedup`` (paired over rounds), widened by half a
            timer step and the configured systematic floor on each median.
        speedup_ci_sampling: the same CI without the floor (sampling error only).
        method: one line naming engine version, timer, flush, interleaving, stop rule.
        n_rounds: interleaved rounds taken (one sample of each arm per round).
        stop_reason: ``converged``, ``time_budget`` or ``max_samples``.
        throttled: the device reported a thermal or power slowdown during the run.
        clocks: device readings before and after (SM/memory clock, temperature,
            slowdown reasons) where available, else empty.
        fingerprint: :func:`aka.timing.device_fingerprint` of the device.
        timer: ``perf_counter``, ``cuda_event`` or ``cuda_graph``.
        flush_bytes: bytes zeroed before each sample (0: no flush).
        resolution_s: smallest visible timer step in the samples.
        host_check: host-clock cross-check of the GPU windows (medians of host time and
            event time per arm, excess, and ``suspect``: work escaped the events).
        wall_s: wall time of the whole measurement (warm-up, capture, statistics).
        overhead_s: ``wall_s`` minus the sum of all samples: the engine's own cost.
        config: the :class:`TimingConfig` used, as a dict.
        notes: anything that changed the plan (e.g. a graph capture that failed).
    """

    baseline: SampleStats
    candidate: SampleStats
    speedup: float
    speedup_ci: tuple[float, float]
    speedup_ci_sampling: tuple[float, float]
    method: str
    n_rounds: int
    stop_reason: str
    throttled: bool
    clocks: dict[str, Any]
    fingerprint: dict[str, Any]
    timer: str
    flush_bytes: int
    resolution_s: float
    host_check: dict[str, Any]
    wall_s: float
    overhead_s: float
    config: dict[str, Any]
    notes: tuple[str, ...] = ()

    @property
    def significant(self) -> bool:
        """Whether the speedup CI excludes 1 (a difference at the configured level)."""
        lo, hi = self.speedup_ci
        return lo > 1.0 or hi < 1.0

    @property
    def verdict(self) -> str:
        """``faster``, ``slower`` (candidate vs baseline) or ``same`` (CI holds 1)."""
        if not self.significant:
            return "same"
        return "faster" if self.speedup_ci[0] > 1.0 else "slower"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form with raw samples as lists (store them as a blob)."""
        return {
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "speedup": self.speedup,
            "speedup_ci": list(self.speedup_ci),
            "speedup_ci_sampling": list(self.speedup_ci_sampling),
            "significant": self.significant,
            "verdict": self.verdict,
            "method": self.method,
            "n_rounds": self.n_rounds,
            "stop_reason": self.stop_reason,
            "throttled": self.throttled,
            "clocks": self.clocks,
            "fingerprint": self.fingerprint,
            "timer": self.timer,
            "flush_bytes": self.flush_bytes,
            "resolution_s": self.resolution_s,
            "host_check": self.host_check,
            "wall_s": self.wall_s,
            "overhead_s": self.overhead_s,
            "config": self.config,
            "notes": list(self.notes),
        }
