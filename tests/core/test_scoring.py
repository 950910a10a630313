"""Scoring is AgentKernelArena's by default and keeps every component."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aka.scoring import Measurements, apply_policy, geomean, score


def test_agentkernelarena_tiers() -> None:
    assert score(Measurements(compiled=False, correct=False)).score == 0.0
    assert score(Measurements(compiled=True, correct=False)).score == 20.0
    assert score(
        Measurements(compiled=True, correct=True, speedups=[2.0, 0.5])
    ).score == pytest.approx(220.0)
    assert score(Measurements(compiled=True, correct=True, speedups=[4.0])).score == pytest.approx(
        520.0
    )


def test_hack_flag_means_wrong() -> None:
    r = score(
        Measurements(compiled=True, correct=True, speedups=[10.0], hack_flags=["forbidden_api"])
    )
    assert r.score == 20.0 and r.components["hacked"] == 1.0 and r.speedup is None


@given(st.lists(st.floats(0.01, 100), min_size=1, max_size=8))
def test_reshaping_from_components_needs_no_measurements(speedups: list[float]) -> None:
    r = score(Measurements(compiled=True, correct=True, speedups=speedups))
    assert r.speedup == pytest.approx(geomean(speedups))
    assert apply_policy("log_speedup", r.components) == pytest.approx(math.log(geomean(speedups)))
    assert apply_policy("agentkernelarena", r.components) == pytest.approx(r.score)
    assert apply_policy("fast_p", r.components) == (1.0 if r.components["speedup"] > 1.0 else 0.0)


def test_unknown_policy() -> None:
    with pytest.raises(ValueError, match="unknown scoring policy"):
        apply_policy("nope", {})
