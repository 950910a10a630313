"""Statistics on synthetic samples whose true median is known."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aka.timing import (
    bootstrap_median_ci,
    median_ci,
    order_stat_coverage,
    ratio_of_medians_ci,
    rel_halfwidth,
    timer_resolution,
)

# Distributions with a closed-form median, shaped like kernel timings (right-skewed).
DISTS = {
    "lognormal": (lambda rng, n, s: np.exp(rng.normal(0.0, s, n)), lambda s: 1.0),
    "exponential+1": (
        lambda rng, n, s: 1.0 + rng.exponential(s, n),
        lambda s: 1.0 + s * math.log(2),
    ),
    "uniform": (lambda rng, n, s: rng.uniform(1.0, 1.0 + s, n), lambda s: 1.0 + s / 2),
}


@settings(max_examples=12, deadline=None)
@given(
    dist=st.sampled_from(sorted(DISTS)),
    n=st.integers(min_value=8, max_value=400),
    spread=st.floats(min_value=0.01, max_value=1.0),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_median_ci_covers_the_true_median_as_often_as_promised(dist, n, spread, seed):
    draw, truth = DISTS[dist]
    rng = np.random.default_rng(seed)
    trials = 600
    hits = 0
    for _ in range(trials):
        _, lo, hi = median_ci(draw(rng, n, spread), 0.95)
        hits += lo <= truth(spread) <= hi
    exact = order_stat_coverage(n, 0.95)
    assert exact >= 0.95
    sd = math.sqrt(exact * (1 - exact) / trials)
    assert abs(hits / trials - exact) <= 4.5 * sd + 1e-9


@pytest.mark.parametrize("n", [2999, 3001, 10_000])
def test_order_rank_stays_valid_across_the_normal_approximation(n):
    assert order_stat_coverage(n, 0.95) >= 0.949


def test_order_statistic_interval_brackets_the_median_and_widens_with_resolution():
    x = [5.0, 1.0, 3.0, 2.0, 4.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    med, lo, hi = median_ci(x)
    assert lo <= med <= hi and med == 5.5
    _, lo2, hi2 = median_ci(x, resolution=1.0)
    assert (lo2, hi2) == (lo - 0.5, hi + 0.5)
    with pytest.raises(ValueError):
        median_ci([])


@settings(max_examples=4, deadline=None)
@given(
    n=st.integers(min_value=30, max_value=200),
    true_ratio=st.floats(min_value=0.5, max_value=2.0),
    spread=st.floats(min_value=0.01, max_value=0.3),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_ratio_of_medians_ci_covers_the_true_ratio(n, true_ratio, spread, seed):
    rng = np.random.default_rng(seed)
    trials, hits = 150, 0
    for t in range(trials):
        a = true_ratio * np.exp(rng.normal(0.0, spread, n))
        b = np.exp(rng.normal(0.0, spread, n))
        _, lo, hi = ratio_of_medians_ci(a, b, 0.95, n_boot=400, seed=t)
        hits += lo <= true_ratio <= hi
    # percentile bootstrap of a median is approximate: allow 88-100 %
    assert hits / trials >= 0.88


def test_ratio_ci_contains_the_estimate_and_the_floor_widens_it():
    rng = np.random.default_rng(1)
    a, b = 1.1 + rng.exponential(0.01, 100), 1.0 + rng.exponential(0.01, 100)
    r, lo, hi = ratio_of_medians_ci(a, b)
    assert lo <= r <= hi
    assert r == pytest.approx(np.median(a) / np.median(b))
    _, lo_f, hi_f = ratio_of_medians_ci(a, b, floor=0.01)
    assert lo_f < lo and hi_f > hi
    _, lo_u, hi_u = ratio_of_medians_ci(a, b[:50])  # unpaired path
    assert lo_u <= r <= hi_u


def test_bootstrap_median_ci_agrees_with_order_statistics_roughly():
    x = np.random.default_rng(3).lognormal(0.0, 0.2, 500)
    m1, lo1, hi1 = median_ci(x)
    m2, lo2, hi2 = bootstrap_median_ci(x)
    assert m1 == m2
    assert abs((hi1 - lo1) - (hi2 - lo2)) < 0.5 * (hi1 - lo1)


def test_timer_resolution_finds_the_step_of_quantized_samples():
    rng = np.random.default_rng(0)
    step = 32e-9
    a = np.round(rng.normal(7.5e-6, 1e-7, 300) / step) * step
    assert timer_resolution(a) == pytest.approx(step, rel=1e-6)
    assert timer_resolution([1.0]) == 0.0
    assert rel_halfwidth(a, resolution=step) > rel_halfwidth(a)
    assert rel_halfwidth([]) == math.inf
