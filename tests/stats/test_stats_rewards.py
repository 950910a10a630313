"""Reward policies: the documented rules, their invariants, and policy specs."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aka.errors import InputError
from aka.stats.rewards import (
    Components,
    RewardPolicy,
    agentkernelarena,
    fast_p,
    log_speedup,
    parse_policy,
    shape_reward,
)

speedups = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False)
components = st.builds(
    Components,
    compiled=st.booleans(),
    correct=st.booleans(),
    speedup=st.none() | speedups,
    hack_flags=st.lists(st.sampled_from(["replay", "side_stream"]), max_size=2).map(tuple),
    baseline_time_s=st.none() | st.floats(1e-6, 1.0),
    candidate_time_s=st.none() | st.floats(1e-6, 1.0),
    speedup_ci_low=st.none() | speedups,
    speedup_ci_high=st.none() | speedups,
    trials=st.none() | st.integers(0, 1000),
)
policies = st.builds(
    RewardPolicy,
    name=st.sampled_from(["agentkernelarena", "log_speedup", "fast_p"]),
    floor=st.floats(0.01, 1.0),
    cap=st.none() | st.floats(1.0, 100.0),
    thresholds=st.lists(st.floats(0.5, 4.0), min_size=1, max_size=4).map(tuple),
    zero_on_hack=st.booleans(),
)


def ok(speedup: float) -> Components:
    return Components(compiled=True, correct=True, speedup=speedup)


def test_agentkernelarena_is_0_20_or_120_plus_100_times_speedup() -> None:
    assert agentkernelarena(Components(compiled=False, correct=False)) == 0.0
    assert agentkernelarena(Components(compiled=True, correct=False)) == 20.0
    assert agentkernelarena(ok(1.5)) == pytest.approx(270.0)


@given(speedups, speedups, st.floats(0.05, 1.0))
def test_log_speedup_is_monotone_and_failures_sit_at_the_floor(
    s1: float, s2: float, floor: float
) -> None:
    lo, hi = sorted((s1, s2))
    assert log_speedup(ok(lo), floor=floor) <= log_speedup(ok(hi), floor=floor)
    failed = log_speedup(Components(compiled=True, correct=False), floor=floor)
    assert failed == pytest.approx(math.log(floor)) and log_speedup(ok(lo), floor=floor) >= failed


@given(speedups, st.floats(1.0, 50.0))
def test_log_speedup_cap_bounds_the_reward(s: float, cap: float) -> None:
    assert log_speedup(ok(s), cap=cap) <= math.log(cap) + 1e-12


@given(speedups, st.lists(st.floats(0.5, 4.0), min_size=1, max_size=4).map(tuple))
def test_fast_p_is_the_share_of_thresholds_strictly_beaten(s: float, ts: tuple[float, ...]) -> None:
    assert fast_p(ok(s), thresholds=ts) == pytest.approx(sum(s > p for p in ts) / len(ts))
    assert fast_p(Components(compiled=True, correct=False, speedup=s), thresholds=ts) == 0.0


@given(components, policies)
def test_a_hack_flag_gets_the_failure_reward_when_the_policy_says_so(
    c: Components, p: RewardPolicy
) -> None:
    failed = shape_reward(Components(compiled=False, correct=False), p)
    flagged = Components(**{**c.__dict__, "hack_flags": ("replay",)})
    if p.zero_on_hack:
        assert shape_reward(flagged, p) == failed
    else:
        assert shape_reward(flagged, p) == shape_reward(
            Components(**{**c.__dict__, "hack_flags": ()}), p
        )


@given(components, policies)
def test_rewards_depend_only_on_the_stored_components(c: Components, p: RewardPolicy) -> None:
    # what the export writes (JSON components, JSON policy) gives the same number back
    again = shape_reward(json.loads(c.to_json()), p.to_json())
    assert again == shape_reward(c, p)
    assert Components.from_mapping(json.loads(c.to_json())) == c


@given(policies)
def test_policy_json_round_trips(p: RewardPolicy) -> None:
    assert parse_policy(p.to_json()) == p


def test_short_policy_specs() -> None:
    assert parse_policy("log_speedup:floor=0.25,cap=8") == RewardPolicy(
        name="log_speedup", floor=0.25, cap=8.0
    )
    assert parse_policy("fast_p:thresholds=1.0/2.0,zero_on_hack=false") == RewardPolicy(
        name="fast_p", thresholds=(1.0, 2.0), zero_on_hack=False
    )
    assert parse_policy(" agentkernelarena ") == RewardPolicy()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("speedup_squared", "unknown policy"),
        ("log_speedup:gamma=2", "unknown parameter"),
        ("log_speedup:floor", "not key=value"),
        ("log_speedup:floor=2", "floor must be"),
        ("fast_p:zero_on_hack=maybe", "true or false"),
        ("fast_p:thresholds=fast", "could not convert"),
    ],
)
def test_bad_policy_specs_are_input_errors_with_a_fix(spec: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as err:
        parse_policy(spec)
    assert err.value.fix is not None and "log_speedup" in err.value.fix
