"""Simulated experiments: the statistics keep their stated error rates.

An A/A comparison (two arms drawn from one distribution) must come out "no detectable
difference" about 1 - alpha of the time, and intervals must cover a known true delta at
about their nominal rate (../shared FIELD notes: "that is the check that the statistics
are honest"). Seeds are fixed, so each run is reproducible; the tolerance is the
two-sided 99.8 % acceptance region of a binomial count with the nominal rate, so a
correct implementation fails these tests with probability about 0.002 per seed choice.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from stats_synth import Model, experiment, true_deltas

from aka.stats import compare

ALPHA = 0.05
N_SIM = 250
SIZES = [N_SIM, pytest.param(1000, marks=pytest.mark.slow, id="1000")]
N_BOOT, N_PERM = 1000, 999


def acceptance(rate: float, n: int) -> tuple[float, float]:
    """Rates a Binomial(n, rate) count falls between with probability 0.998."""
    lo, hi = stats.binom.ppf(0.001, n, rate), stats.binom.isf(0.001, n, rate)
    return float(lo) / n, float(hi) / n


@pytest.mark.parametrize("n_sim", SIZES)
def test_a_a_comparisons_hold_the_false_positive_rate(n_sim: int) -> None:
    results = [
        compare(*experiment(1_000 + s), alpha=ALPHA, seed=s, n_boot=N_BOOT, n_permutations=N_PERM)
        for s in range(n_sim)
    ]
    lo, hi = acceptance(ALPHA, n_sim)
    verdicts = np.mean([r.verdict != "no detectable difference" for r in results])
    permutation = np.mean([r.paired.permutation_p < ALPHA for r in results])
    wilcoxon = np.mean([r.paired.wilcoxon_p < ALPHA for r in results])
    ci_misses = np.mean(
        [
            not (r.paired.delta_log_speedup_ci[0] <= 0 <= r.paired.delta_log_speedup_ci[1])
            for r in results
        ]
    )
    print(
        f"A/A n={n_sim}: verdict {verdicts:.3f} permutation {permutation:.3f} "
        f"wilcoxon {wilcoxon:.3f} ci {ci_misses:.3f}"
    )
    # the verdict needs both the test and the interval, so it can only be stricter
    assert verdicts <= min(permutation, ci_misses)
    for name, rate in [
        ("verdict", verdicts),
        ("permutation", permutation),
        ("wilcoxon", wilcoxon),
        ("ci", ci_misses),
    ]:
        assert lo <= rate <= hi, (
            f"{name} false-positive rate {rate:.3f} outside [{lo:.3f}, {hi:.3f}]"
        )


@pytest.mark.parametrize("n_sim", SIZES)
def test_bootstrap_intervals_cover_a_known_effect_at_their_nominal_rate(n_sim: int) -> None:
    model = Model(effect_sd=0.15)
    effect = 0.3
    truth_log, truth_fast = true_deltas(model, effect, floor=0.5, n=2_000_000, seed=99)
    results = [
        compare(
            *experiment(5_000 + s, effect=effect, model=model),
            alpha=ALPHA,
            seed=s,
            n_boot=N_BOOT,
            n_permutations=N_PERM,
        )
        for s in range(n_sim)
    ]
    lo, hi = acceptance(1 - ALPHA, n_sim)
    cover_log = np.mean(
        [
            r.paired.delta_log_speedup_ci[0] <= truth_log <= r.paired.delta_log_speedup_ci[1]
            for r in results
        ]
    )
    cover_fast = np.mean(
        [r.paired.delta_fast_1_ci[0] <= truth_fast <= r.paired.delta_fast_1_ci[1] for r in results]
    )
    print(f"coverage n={n_sim}: log speedup {cover_log:.3f} fast_1.0 {cover_fast:.3f}")
    assert lo <= cover_log <= hi, f"log-speedup CI coverage {cover_log:.3f}"
    assert lo <= cover_fast <= hi, f"fast_1.0 CI coverage {cover_fast:.3f}"
    # the estimate is unbiased for the estimand the interval claims to cover
    mean_est = np.mean([r.paired.delta_log_speedup for r in results])
    spread = np.std([r.paired.delta_log_speedup for r in results]) / np.sqrt(n_sim)
    assert abs(mean_est - truth_log) < 4 * spread
