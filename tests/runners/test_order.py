"""Claim order: per-task estimates from envelopes, and a stable longest-first sort."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from aka_runners import longest_first, task_estimates

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _env(kind: str, run: str, key: str, at: float, **payload: object) -> SimpleNamespace:
    return SimpleNamespace(
        type=kind,
        run_id=run,
        attempt_key=key,
        time=T0 + timedelta(seconds=at),
        payload=SimpleNamespace(**payload),
    )


def test_estimate_is_the_median_of_finished_tries_across_runs() -> None:
    envs = [
        _env("AttemptPlanned", "r1", "k1", 0, task="big"),
        _env("AttemptStarted", "r1", "k1", 0, try_no=1),
        _env("AttemptFinished", "r1", "k1", 100, try_no=1),
        _env("AttemptPlanned", "r2", "k1", 0, task="big"),  # same key, another run
        _env("AttemptStarted", "r2", "k1", 10, try_no=1),
        _env("AttemptFinished", "r2", "k1", 30, try_no=1),
        _env("AttemptStarted", "r2", "k1", 40, try_no=2),
        _env("AttemptFinished", "r2", "k1", 100, try_no=2),
        _env("AttemptPlanned", "r1", "k2", 0, task="small"),
        _env("AttemptStarted", "r1", "k2", 0, try_no=1),  # never finished: a killed try
    ]
    assert task_estimates(envs) == {"big": 60.0}


@dataclass(frozen=True)
class P:
    key: str
    task: str


@given(
    st.lists(st.sampled_from("abcde"), max_size=30),
    st.dictionaries(st.sampled_from("abcd"), st.floats(0, 1e4)),
)
def test_longest_first_is_a_stable_permutation(tasks: list[str], est: dict[str, float]) -> None:
    plans = [P(f"k{i}", t) for i, t in enumerate(tasks)]
    out = longest_first(plans, est)
    assert sorted(out, key=lambda p: p.key) == sorted(plans, key=lambda p: p.key)
    known = [p for p in out if p.task in est]
    assert out[: len(out) - len(known)] == [p for p in plans if p.task not in est]
    assert [est[p.task] for p in known] == sorted((est[p.task] for p in known), reverse=True)
    for task in set(tasks):  # attempts of one task keep their planned order
        assert [p for p in out if p.task == task] == [p for p in plans if p.task == task]
