"""Pure statistics for timing: medians, their confidence intervals, ratio-of-medians CIs.

No torch here (and nothing that imports it): these functions take plain sequences of
seconds and return numbers, so CI tests them on synthetic draws with known truth.

Why medians: kernel timings are right-skewed (a preempted or late-launched sample can be
many times the typical one), so the mean moves with rare outliers while the median does
not. Why order statistics for the CI of one median: the interval between two order
statistics covers the true median with a probability that depends only on ``n``
(binomial with p = 1/2), whatever the distribution, so the stop rule can trust it.
Why bootstrap for the ratio: the ratio of two medians has no such closed form.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Samples",
    "bootstrap_median_ci",
    "median_ci",
    "order_stat_coverage",
    "ratio_of_medians_ci",
    "rel_halfwidth",
    "timer_resolution",
]

Samples = Sequence[float] | NDArray[np.float64]
"""Raw samples in seconds: any float sequence or a float array."""

_NORMAL_ABOVE = 3000  # beyond this n the binomial quantile uses the normal approximation


def _z(level: float) -> float:
    """Two-sided standard-normal quantile for ``level`` (no scipy: keep imports light)."""
    # Acklam-free route: invert erf by bisection; 60 halvings are exact to float precision.
    target = 1.0 - (1.0 - level) / 2.0
    lo, hi = 0.0, 10.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if 0.5 * (1.0 + math.erf(mid / math.sqrt(2.0))) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


@lru_cache(maxsize=4096)
def _order_rank(n: int, level: float) -> int:
    """Largest 1-based rank ``j`` with P(Bin(n, 1/2) <= j - 1) <= (1 - level) / 2.

    The interval [x_(j), x_(n-j+1)] then covers the median with probability at least
    ``level``. Returns 0 when even [x_(1), x_(n)] is too short (tiny ``n``).
    """
    alpha_half = (1.0 - level) / 2.0
    if n > _NORMAL_ABOVE:
        j = math.floor(n / 2.0 - _z(level) * math.sqrt(n) / 2.0)
        return max(j, 0)
    log_half_n = n * math.log(0.5)
    cdf = 0.0
    j = 0
    for k in range(n // 2 + 1):
        pmf = math.exp(
            math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + log_half_n
        )
        if cdf + pmf > alpha_half:
            break
        cdf += pmf
        j = k + 1
    return j


def order_stat_coverage(n: int, level: float = 0.95) -> float:
    """Exact coverage of :func:`median_ci` for ``n`` continuous samples (>= ``level``).

    Tests compare the empirical coverage on synthetic draws against this number.
    """
    j = _order_rank(n, level)
    if j == 0:
        return 1.0 - 2.0 * 0.5**n
    log_half_n = n * math.log(0.5)
    tail = sum(
        math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + log_half_n)
        for k in range(j)
    )
    return 1.0 - 2.0 * tail


def timer_resolution(*arms: Samples) -> float:
    """Smallest positive gap between distinct sample values: the timer's visible step.

    A coarse timer makes many samples equal, and the median of quantized samples can sit
    half a step away from the true median whatever ``n`` is; CIs are widened by half this
    step so they stay honest. With a fine timer the smallest gap is tiny and changes
    nothing.
    """
    values = np.unique(np.concatenate([np.asarray(a, dtype=float) for a in arms]))
    if values.size < 2:
        return 0.0
    gaps = np.diff(values)
    return float(gaps.min())


def median_ci(
    samples: Samples, level: float = 0.95, resolution: float = 0.0
) -> tuple[float, float, float]:
    """Median and distribution-free confidence interval from order statistics.

    Args:
        samples: observations (any order).
        level: two-sided confidence level.
        resolution: timer step; the interval is widened by half of it on each side.

    Returns:
        ``(median, low, high)``; for ``n`` too small for ``level`` the interval is the
        sample range (coverage then ``1 - 2 * 0.5**n``, see :func:`order_stat_coverage`).
    """
    x = np.sort(np.asarray(samples, dtype=float))
    n = x.size
    if n == 0:
        raise ValueError("median_ci needs at least one sample")
    med = float(np.median(x))
    j = _order_rank(n, level)
    lo_i, hi_i = (j - 1, n - j) if j > 0 else (0, n - 1)
    half = resolution / 2.0
    return med, float(x[lo_i]) - half, float(x[hi_i]) + half


def rel_halfwidth(samples: Samples, level: float = 0.95, resolution: float = 0.0) -> float:
    """Half-width of the median's CI relative to the median (``inf`` if undefined)."""
    if len(samples) == 0:
        return math.inf
    med, lo, hi = median_ci(samples, level, resolution)
    if med <= 0.0:
        return math.inf
    return (hi - lo) / 2.0 / med


def _boot_medians(
    x: NDArray[np.float64], idx_source: np.random.Generator, n_boot: int
) -> NDArray[np.float64]:
    out = np.empty(n_boot)
    chunk = max(1, 2_000_000 // max(x.size, 1))  # bound memory: ~16 MB of indices per chunk
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        idx = idx_source.integers(0, x.size, size=(stop - start, x.size))
        out[start:stop] = np.median(x[idx], axis=1)
    return out


def bootstrap_median_ci(
    samples: Samples, level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Median and percentile-bootstrap CI; a cross-check of :func:`median_ci`."""
    x = np.asarray(samples, dtype=float)
    if x.size == 0:
        raise ValueError("bootstrap_median_ci needs at least one sample")
    meds = _boot_medians(x, np.random.default_rng(seed), n_boot)
    a = (1.0 - level) / 2.0
    return float(np.median(x)), float(np.quantile(meds, a)), float(np.quantile(meds, 1.0 - a))


def ratio_of_medians_ci(
    baseline: Samples,
    candidate: Samples,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
    resolution: float = 0.0,
    floor: float = 0.0,
) -> tuple[float, float, float]:
    """``median(baseline) / median(candidate)`` with a percentile-bootstrap CI.

    When both arms have the same length they are resampled as pairs (sample ``i`` of each
    arm came from the same interleaved round), which keeps drift shared by both arms out
    of the interval; otherwise each arm is resampled on its own. The interval is widened
    by half a timer step plus ``floor`` (a systematic error allowed on each median, in
    seconds) on each median.

    Returns:
        ``(ratio, low, high)``.
    """
    a = np.asarray(baseline, dtype=float)
    b = np.asarray(candidate, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("ratio_of_medians_ci needs samples in both arms")
    ma, mb = float(np.median(a)), float(np.median(b))
    ratio = ma / mb
    rng = np.random.default_rng(seed)
    q = (1.0 - level) / 2.0
    if a.size == b.size:
        chunk = max(1, 1_000_000 // a.size)
        ratios = np.empty(n_boot)
        for start in range(0, n_boot, chunk):
            stop = min(n_boot, start + chunk)
            idx = rng.integers(0, a.size, size=(stop - start, a.size))
            # The same rows of indices for both arms (pairs), each arm's medians along
            # its contiguous last axis.
            ratios[start:stop] = np.median(a[idx], axis=1) / np.median(b[idx], axis=1)
    else:
        ratios = _boot_medians(a, rng, n_boot) / _boot_medians(b, rng, n_boot)
    lo, hi = float(np.quantile(ratios, q)), float(np.quantile(ratios, 1.0 - q))
    slack = resolution / 2.0 + floor
    widen = slack / ma + slack / mb
    return ratio, min(lo, ratio) * (1.0 - widen), max(hi, ratio) * (1.0 + widen)
