"""The interleaving order and the stop rule."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from aka.timing import interleaved_orders, stop_decision


@given(n=st.integers(min_value=0, max_value=400), seed=st.integers(min_value=0, max_value=10**9))
def test_orders_are_balanced_in_every_even_prefix(n, seed):
    orders = interleaved_orders(n, seed)
    assert all(o in ((0, 1), (1, 0)) for o in orders)
    for k in range(0, n + 1, 2):
        firsts = [o[0] for o in orders[:k]]
        assert firsts.count(0) == firsts.count(1)


@given(seed=st.integers(min_value=0, max_value=10**9))
def test_orders_are_deterministic_per_seed_and_random_across_rounds(seed):
    a = interleaved_orders(200, seed)
    assert a == interleaved_orders(200, seed)
    # random, not alternating: some blocks start with B, some with A
    block_starts = {a[i] for i in range(0, 200, 2)}
    assert block_starts == {(0, 1), (1, 0)}


def test_different_seeds_give_different_orders():
    assert len({tuple(interleaved_orders(64, s)) for s in range(20)}) > 15


def _d(a, b, **kw):
    args = dict(
        target_rel_ci=0.005, elapsed_s=0.0, max_time_s=10.0, min_samples=10, max_samples=1000
    )
    return stop_decision(a, b, **(args | kw))


def test_stop_rule_waits_for_min_samples_then_converges_on_tight_arms():
    tight = list(1.0 + np.random.default_rng(0).normal(0, 1e-4, 9))
    assert not _d(tight, tight).stop  # 9 < min_samples
    tight = list(1.0 + np.random.default_rng(0).normal(0, 1e-4, 50))
    d = _d(tight, tight)
    assert d.stop and d.reason == "converged"
    assert max(d.rel_halfwidths) <= 0.005


def test_stop_rule_needs_both_arms_precise():
    rng = np.random.default_rng(1)
    tight = list(1.0 + rng.normal(0, 1e-4, 50))
    loose = list(1.0 + rng.normal(0, 0.2, 50))
    assert not _d(tight, loose).stop
    d = _d(tight, loose, elapsed_s=11.0)
    assert d.stop and d.reason == "time_budget"
    d = _d(loose[:20], loose[:20], max_samples=20)
    assert d.stop and d.reason == "max_samples"


def test_stop_rule_never_converges_below_the_timer_step():
    same = [1.0] * 100  # a timer that cannot see the spread
    assert _d(same, same).reason == "converged"
    assert not _d(same, same, resolution=0.1).stop


@given(
    spread=st.floats(min_value=1e-5, max_value=0.5),
    n=st.integers(min_value=10, max_value=300),
    elapsed=st.floats(min_value=0.0, max_value=20.0),
)
def test_stop_rule_looks_only_at_precision_not_at_the_difference(spread, n, elapsed):
    rng = np.random.default_rng(n)
    a = list(1.0 + rng.normal(0, spread, n))
    shifted = [2.0 * v for v in a]  # same relative precision, twice the time
    assert _d(a, a, elapsed_s=elapsed) == _d(a, shifted, elapsed_s=elapsed)
