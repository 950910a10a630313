"""Estimators on arrays: pass@k, bootstrap CI, tests, effect sizes, minimum detectable effect."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import comb

from aka.stats._estimators import (
    VarianceSplit,
    bootstrap_mean_ci,
    cohens_dz,
    min_detectable_effect,
    pass_at_k,
    rank_biserial,
    sign_flip_pvalue,
    split_variance,
    wilcoxon_pvalue,
)


@given(
    st.integers(1, 60).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))
    )
)
def test_pass_at_k_matches_the_binomial_formula(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    expected = 1.0 - comb(n - c, k, exact=True) / comb(n, k, exact=True)
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


@given(st.integers(2, 40).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_grows_with_k_and_starts_at_the_pass_rate(nc: tuple[int, int]) -> None:
    n, c = nc
    values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert values[0] == pytest.approx(c / n)
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(values))
    assert values[-1] == (1.0 if c > 0 else 0.0)


def test_pass_at_k_rejects_k_outside_one_to_n() -> None:
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(3, 1, 4)


@given(st.lists(st.floats(-3, 3), min_size=2, max_size=40), st.integers(0, 2**16))
def test_bootstrap_ci_brackets_the_sample_mean(values: list[float], seed: int) -> None:
    lo, hi = bootstrap_mean_ci(values, alpha=0.05, n_boot=200, rng=np.random.default_rng(seed))
    mean = float(np.mean(values))
    assert lo <= mean + 1e-9 and mean - 1e-9 <= hi


def test_bootstrap_ci_is_wider_than_the_plain_percentile_interval() -> None:
    x = np.random.default_rng(5).normal(size=12)
    rng = np.random.default_rng(0)
    lo, hi = bootstrap_mean_ci(x, alpha=0.05, n_boot=4000, rng=rng)
    rng = np.random.default_rng(0)
    means = x[rng.integers(0, x.size, size=(4000, x.size))].mean(axis=1)
    plo, phi = np.quantile(means, [0.025, 0.975])
    assert lo < plo and hi > phi


def test_tests_find_no_difference_in_all_zero_deltas() -> None:
    zeros = np.zeros(10)
    assert wilcoxon_pvalue(zeros) == 1.0
    assert sign_flip_pvalue(zeros, n_resamples=99, seed=0) == 1.0
    assert rank_biserial(zeros) == 0.0
    assert math.isnan(cohens_dz(zeros))


def test_sign_flip_test_is_exact_for_few_tasks() -> None:
    # 6 positive deltas: only "all +" and "all -" reach the observed |mean|: p = 2/64.
    p = sign_flip_pvalue(np.arange(1.0, 7.0), n_resamples=9999, seed=0)
    assert p == pytest.approx(2 / 64)


def test_effect_sizes_have_the_sign_of_the_deltas() -> None:
    d = np.array([0.5, 0.2, 0.3, -0.1, 0.4])
    assert cohens_dz(d) > 0 and cohens_dz(-d) < 0
    assert rank_biserial(d) == pytest.approx((15 - 2 * 1) / 15)  # ranks 1..5, the 0.1 has rank 1
    assert rank_biserial(-d) == pytest.approx(-rank_biserial(d))


def test_variance_split_recovers_within_and_between_parts() -> None:
    rng = np.random.default_rng(3)
    n, r, between, within = 4000, 4, 0.09, 0.25
    true = rng.normal(0, math.sqrt(between), n)
    a = rng.normal(0, math.sqrt(within), (n, r))
    b = true[:, None] + rng.normal(0, math.sqrt(within), (n, r))
    d = b.mean(1) - a.mean(1)
    vars_ = np.concatenate([a.var(1, ddof=1), b.var(1, ddof=1)])
    split = split_variance(d, vars_, np.full(n, 2 / r))
    assert split.within == pytest.approx(within, rel=0.05)
    assert split.between == pytest.approx(between, rel=0.15)


def test_mde_shrinks_with_tasks_and_repeats() -> None:
    split = VarianceSplit(between=0.05, within=0.2)
    base = min_detectable_effect(split, n_tasks=20, repeats=2, alpha=0.05)
    assert min_detectable_effect(split, n_tasks=80, repeats=2, alpha=0.05) < base
    assert min_detectable_effect(split, n_tasks=20, repeats=8, alpha=0.05) < base
    # Repeats cannot remove between-task variance; tasks can.
    floor = (
        min_detectable_effect(VarianceSplit(0.05, 0.0), n_tasks=20, repeats=1, alpha=0.05) * 0.999
    )
    assert min_detectable_effect(split, n_tasks=20, repeats=10_000, alpha=0.05) > floor


def test_mde_is_the_effect_a_paired_t_test_detects_with_80_percent_power() -> None:
    split = VarianceSplit(between=0.04, within=0.1)
    n, r, alpha = 25, 3, 0.05
    mde = min_detectable_effect(split, n_tasks=n, repeats=r, alpha=alpha)
    sd = math.sqrt(split.between + 2 * split.within / r)
    rng = np.random.default_rng(11)
    d = rng.normal(mde, sd, size=(4000, n))
    t = d.mean(1) / (d.std(1, ddof=1) / math.sqrt(n))
    from scipy import stats

    power = float((np.abs(t) > stats.t.ppf(1 - alpha / 2, n - 1)).mean())
    assert power == pytest.approx(0.8, abs=0.03)
