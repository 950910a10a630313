"""Scoring: one policy registry for scores and rewards, every component kept."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from aka import events as ev
from aka.report import connect
from aka.scoring import Components, Measurements, RewardPolicy, geomean, score, shape_reward
from aka.stats.rewards import shape_reward as export_shape_reward
from aka_ledger import EventModel, EventRegistry, Ledger

OUTCOMES = {
    "did not compile": Measurements(compiled=False, correct=False),
    "wrong": Measurements(compiled=True, correct=False),
    "hacked": Measurements(compiled=True, correct=True, speedups=[10.0], hack_flags=["replay"]),
    "slow": Measurements(compiled=True, correct=True, speedups=[0.2, 0.3]),
    "fast": Measurements(compiled=True, correct=True, speedups=[2.0, 0.5, 4.0]),
}


def test_agentkernelarena_tiers() -> None:
    assert score(OUTCOMES["did not compile"]).score == 0.0
    assert score(OUTCOMES["wrong"]).score == 20.0
    assert score(
        Measurements(compiled=True, correct=True, speedups=[2.0, 0.5])
    ).score == pytest.approx(220.0)
    assert score(Measurements(compiled=True, correct=True, speedups=[4.0])).score == pytest.approx(
        520.0
    )


def test_hack_flag_gets_the_failure_score() -> None:
    r = score(OUTCOMES["hacked"])
    assert r.score == 0.0 and r.components["hacked"] == 1.0 and r.speedup is None
    lenient = score(OUTCOMES["hacked"], "agentkernelarena:zero_on_hack=false")
    assert lenient.score == 20.0


@pytest.mark.parametrize("outcome", sorted(OUTCOMES))
@pytest.mark.parametrize(
    "policy", ["agentkernelarena", "log_speedup", "fast_p", "log_speedup:floor=0.25,cap=4"]
)
def test_a_policy_name_gives_the_same_number_in_scoring_and_in_export(
    outcome: str, policy: str
) -> None:
    """`aka report` shows the Scored score, `aka export rewards` reshapes the row."""
    m = OUTCOMES[outcome]
    r = score(m, policy)
    row = {
        "compiled": m.compiled,
        "correct": bool(r.components["correct"]),
        "speedup": r.speedup,
        "hack_flags": list(m.hack_flags),
    }
    assert export_shape_reward(row, policy) == pytest.approx(r.score)
    assert shape_reward(row, r.policy.to_json()) == pytest.approx(r.score)


def test_log_speedup_counts_a_failure_at_the_floor() -> None:
    assert score(OUTCOMES["wrong"], "log_speedup").score == pytest.approx(math.log(0.5))
    assert score(OUTCOMES["slow"], "log_speedup").score == pytest.approx(math.log(0.5))


@given(st.lists(st.floats(0.01, 100), min_size=1, max_size=8))
def test_reshaping_from_components_needs_no_measurements(speedups: list[float]) -> None:
    r = score(Measurements(compiled=True, correct=True, speedups=speedups))
    assert r.speedup == pytest.approx(geomean(speedups))
    c = Components(compiled=True, correct=True, speedup=r.components["speedup"])
    assert shape_reward(c, "log_speedup:floor=0.01") == pytest.approx(
        math.log(max(geomean(speedups), 0.01))
    )
    assert shape_reward(c, "agentkernelarena") == pytest.approx(r.score)
    assert shape_reward(c, "fast_p") == (1.0 if r.components["speedup"] > 1.0 else 0.0)


def test_unknown_policy_and_version() -> None:
    from aka.errors import InputError

    with pytest.raises(InputError, match="unknown policy"):
        score(OUTCOMES["wrong"], "nope")
    with pytest.raises(InputError, match="no version 7"):
        score(OUTCOMES["wrong"], "log_speedup:version=7")


class _ScoredV1(EventModel):
    """``Scored`` as version 1 wrote it: no policy spec."""

    schema_version = 1
    type: Literal["Scored"] = "Scored"
    eval_id: str
    try_no: int
    purpose: str
    compiled: bool
    correct: bool
    speedup: float | None
    score: float
    policy: str
    policy_version: int
    components: dict[str, float]
    hack_flags: list[str] = Field(default_factory=list)


V1_CASES = [
    # (policy, compiled, correct, speedup, hack_flags, score as version 1 recorded it)
    ("log_speedup", True, False, None, [], -1.0),
    ("log_speedup", True, True, 0.2, [], math.log(0.2)),
    ("agentkernelarena", True, False, None, ["replay"], 20.0),
    ("fast_p", True, True, 1.5, [], 1.0),
]


def test_a_version_1_score_is_read_with_the_policy_that_made_it(tmp_path: Path) -> None:
    old = EventRegistry([_ScoredV1, ev.EvaluationStarted])
    led = Ledger.open(tmp_path / "l", registry=old)
    for i, (policy, compiled, correct, sp, flags, value) in enumerate(V1_CASES):
        comps = {"compiled": float(compiled), "correct": float(correct)}
        digest = "b3:" + "0" * 64
        led.append(
            ev.EvaluationStarted(try_no=1, eval_id=f"e{i}", purpose="final", candidate=digest,
                                 task=digest, harness=digest, device="cpu"),
            run_id="r", attempt_key=f"a{i}",
        )  # fmt: skip
        led.append(
            _ScoredV1(eval_id=f"e{i}", try_no=1, purpose="final", compiled=compiled,
                      correct=correct, speedup=sp, score=value, policy=policy,
                      policy_version=1, components=comps, hack_flags=flags),
            run_id="r", attempt_key=f"a{i}",
        )  # fmt: skip
    led.close()
    led = Ledger.open(tmp_path / "l", registry=ev.REGISTRY)
    envs = led.events(types=["Scored"])
    assert [e.version for e in envs] == [1] * len(V1_CASES), "the stored version is kept"
    for env, (policy, compiled, correct, sp, flags, value) in zip(envs, V1_CASES, strict=True):
        p = env.payload
        assert isinstance(p, ev.Scored)
        spec = RewardPolicy(**{**json.loads(p.policy_spec), "thresholds": (1.0,)})
        assert (spec.name, spec.version) == (policy, 1)
        row = {"compiled": compiled, "correct": correct, "speedup": sp, "hack_flags": flags}
        assert shape_reward(row, p.policy_spec) == pytest.approx(value)
    view = connect(led).sql("SELECT eval_id, policy_spec FROM all_scores ORDER BY eval_id")
    assert [s for _, s in view.fetchall()] == [e.payload.policy_spec for e in envs]
