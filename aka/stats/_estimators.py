"""Estimators on plain arrays: pass@k, the paired bootstrap, tests, effect sizes, power.

Everything here takes numbers and returns numbers; the grouping of attempts into tasks
happens in ``_compare``. Each function says which reference its formula follows so a
reader can check it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

FloatArray = NDArray[np.float64]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples of which ``c`` passed: 1 - C(n-c, k) / C(n, k).

    Computed as a running product (Chen et al. 2021, "Evaluating Large Language Models
    Trained on Code") so it stays exact for large ``n`` where the binomials overflow.

    Raises:
        ValueError: ``k`` is not in 1..n or ``c`` is not in 0..n.
    """
    if not 1 <= k <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n, got k={k}, n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n, got c={c}, n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1, dtype=np.float64)))


def bootstrap_mean_ci(
    values: ArrayLike, *, alpha: float, n_boot: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Expanded-percentile bootstrap CI of the mean of independent clusters.

    Each value is one task (the cluster), so resampling values resamples tasks with
    everything inside them. The plain percentile interval is too narrow for the 10-50
    tasks an arena run has (it ignores the t correction); the expanded percentile
    interval widens it by ``sqrt(n/(n-1)) * t_{n-1} / z`` (Hesterberg 2015, "What
    teachers should know about the bootstrap"), which keeps coverage near nominal from
    about ten tasks on and, unlike bootstrap-t, is defined when resamples have no spread.
    """
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    if n < 2:
        return (math.nan, math.nan)
    est = float(x.mean())
    idx = rng.integers(0, n, size=(n_boot, n))
    means = x[idx].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    widen = (
        math.sqrt(n / (n - 1)) * stats.t.ppf(1 - alpha / 2, n - 1) / stats.norm.ppf(1 - alpha / 2)
    )
    return (est + (float(lo) - est) * widen, est + (float(hi) - est) * widen)


def wilcoxon_pvalue(deltas: ArrayLike) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired deltas (zeros dropped).

    All-zero deltas carry no evidence of a difference, so they give p = 1 rather than
    scipy's error.
    """
    d = np.asarray(deltas, dtype=np.float64)
    if d.size == 0 or np.all(d == 0):
        return 1.0
    return float(stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue)


def sign_flip_pvalue(deltas: ArrayLike, *, n_resamples: int, seed: int) -> float:
    """Two-sided paired permutation test of mean delta = 0 (random sign flips).

    Under the null hypothesis the two arms are exchangeable within a task, so each
    task's delta is as likely to have either sign; ``scipy.stats.permutation_test`` with
    one sample and ``permutation_type="samples"`` flips signs, exactly when
    ``2**n <= n_resamples`` and by Monte Carlo otherwise.
    """
    d = np.asarray(deltas, dtype=np.float64)
    if d.size < 2 or np.all(d == 0):
        return 1.0  # one task: both sign flips are as extreme as the data, so p = 1

    def mean_stat(x: FloatArray, axis: int) -> FloatArray:
        return np.mean(x, axis=axis)

    res = stats.permutation_test(
        (d,),
        mean_stat,
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    return min(1.0, float(res.pvalue))


def cohens_dz(deltas: ArrayLike) -> float:
    """Cohen's d_z: mean paired delta over its standard deviation (NaN if no spread)."""
    d = np.asarray(deltas, dtype=np.float64)
    if d.size < 2:
        return math.nan
    sd = float(d.std(ddof=1))
    return float(d.mean()) / sd if sd > 0 else math.nan


def rank_biserial(deltas: ArrayLike) -> float:
    """Matched-pairs rank-biserial correlation (Kerby 2014): (W+ - W-) / (W+ + W-).

    +1 means every task improved, -1 every task got worse; zeros are dropped as in the
    Wilcoxon test it accompanies.
    """
    d = np.asarray(deltas, dtype=np.float64)
    d = d[d != 0]
    if d.size == 0:
        return 0.0
    ranks = stats.rankdata(np.abs(d))
    pos, neg = float(ranks[d > 0].sum()), float(ranks[d < 0].sum())
    return (pos - neg) / (pos + neg)


@dataclass(frozen=True)
class VarianceSplit:
    """Variance of a per-task paired delta, split into task and repeat parts.

    Attributes:
        between: variance of the true per-task delta across tasks.
        within: variance of one attempt around its task's mean (pooled over tasks and
            arms); NaN when no task has two repeats.
    """

    between: float
    within: float


def split_variance(
    deltas: ArrayLike, within_vars: ArrayLike, inv_repeats: ArrayLike
) -> VarianceSplit:
    """Estimate :class:`VarianceSplit` from per-task deltas and per-arm repeat spreads.

    Args:
        deltas: per-task paired delta (mean of B minus mean of A).
        within_vars: per-task per-arm sample variances of attempts (NaN where one repeat).
        inv_repeats: per task, 1/r_A + 1/r_B, the factor the repeat noise enters with.
    """
    d = np.asarray(deltas, dtype=np.float64)
    w = np.asarray(within_vars, dtype=np.float64)
    inv = np.asarray(inv_repeats, dtype=np.float64)
    total = float(d.var(ddof=1)) if d.size > 1 else math.nan
    w = w[np.isfinite(w)]
    if w.size == 0:
        return VarianceSplit(between=total, within=math.nan)
    within = float(w.mean())
    return VarianceSplit(between=max(0.0, total - within * float(inv.mean())), within=within)


def min_detectable_effect(
    split: VarianceSplit, *, n_tasks: int, repeats: float, alpha: float, power: float = 0.8
) -> float:
    """Smallest mean paired delta a two-sided test at ``alpha`` finds with ``power``.

    The paired-t approximation ``(t_{1-alpha/2} + t_{power}) * sd / sqrt(n)`` with
    ``n - 1`` degrees of freedom, where ``sd**2 = between + 2 * within / repeats`` is
    the variance of one task's delta when both arms run ``repeats`` attempts. Adding
    tasks shrinks both terms; adding repeats shrinks only the second, which is why a
    planner should usually buy tasks first.
    """
    if n_tasks < 2 or not math.isfinite(split.between):
        return math.nan
    within = split.within if math.isfinite(split.within) else 0.0
    sd = math.sqrt(split.between + 2.0 * within / repeats)
    df = n_tasks - 1
    factor = float(stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df))
    return factor * sd / math.sqrt(n_tasks)
