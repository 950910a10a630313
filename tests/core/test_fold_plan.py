"""The pure core: fold is deterministic, plan retries exactly what has no result."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from aka import events as ev
from aka.core import attempt_key, fold, initial_plan, is_complete, plan
from aka.scoring import RewardPolicy
from aka_ledger import Envelope

RUN = "r1"
D = "b3:" + "0" * 64


def _env(seq: int, payload: ev.EventModel, key: str | None) -> Envelope:
    return Envelope(
        event_id=f"e{seq}",
        run_id=RUN,
        attempt_key=key,
        writer_id="w",
        seq=seq,
        time=datetime(2026, 1, 1, tzinfo=UTC),
        type=payload.type,
        version=1,
        payload=payload,
        digests=(),
    )


def _planned(tasks: int, arms: int, repeats: int) -> list[Envelope]:
    items = initial_plan(
        [f"t{i}" for i in range(tasks)], [(f"a{j}", "noop") for j in range(arms)], repeats
    )
    return [_env(i, p, attempt_key(p.task, p.arm, p.repeat)) for i, p in enumerate(items)]


def _scored(try_no: int) -> ev.Scored:
    return ev.Scored(
        eval_id="x",
        try_no=try_no,
        purpose="final",
        compiled=True,
        correct=True,
        speedup=1.0,
        score=220.0,
        policy="agentkernelarena",
        policy_version=2,
        policy_spec=RewardPolicy().to_json(),
        components={"compiled": 1.0},
    )


def test_initial_plan_interleaves_arms_and_rotates_order() -> None:
    items = initial_plan(["t"], [("a", "noop"), ("b", "noop")], 2)
    assert [(p.arm, p.repeat) for p in items] == [("a", 0), ("b", 0), ("b", 1), ("a", 1)]
    assert [p.order for p in items] == [0, 1, 2, 3]


def test_plan_skips_scored_and_retries_unfinished_with_reused_candidate() -> None:
    envs = _planned(2, 1, 1)
    k0, k1 = envs[0].attempt_key, envs[1].attempt_key
    cand = ev.CandidateCaptured(try_no=1, tree=D, diff=D, changed=[])
    envs += [
        _env(10, ev.AttemptStarted(try_no=1, worker="w"), k0),
        _env(11, _scored(1), k0),
        _env(12, ev.AttemptFinished(try_no=1, status="scored"), k0),
        _env(13, ev.AttemptStarted(try_no=1, worker="w"), k1),
        _env(14, cand, k1),  # killed here: the agent's work survives, no score
    ]
    todo = plan(fold(RUN, envs), max_tries=3)
    assert [p.key for p in todo] == [k1]
    assert todo[0].try_no == 2 and todo[0].reuse_candidate == cand


def test_plan_gives_up_after_max_tries() -> None:
    envs = _planned(1, 1, 1)
    key = envs[0].attempt_key
    for t in (1, 2):
        envs.append(_env(20 + t, ev.AttemptStarted(try_no=t, worker="w"), key))
        envs.append(_env(30 + t, ev.AttemptFinished(try_no=t, status="error", error="boom"), key))
    assert plan(fold(RUN, envs), max_tries=2) == []
    assert is_complete(fold(RUN, envs), max_tries=2)
    assert len(plan(fold(RUN, envs), max_tries=3)) == 1


@settings(max_examples=60, deadline=None)
@given(
    tasks=st.integers(1, 4),
    arms=st.integers(1, 3),
    repeats=st.integers(1, 3),
    scored=st.sets(st.integers(0, 35)),
    cut=st.integers(0, 80),
)
def test_fold_is_deterministic_and_incremental(
    tasks: int, arms: int, repeats: int, scored: set[int], cut: int
) -> None:
    envs = _planned(tasks, arms, repeats)
    n = len(envs)
    for i in sorted(s for s in scored if s < n):
        key = envs[i].attempt_key
        envs += [
            _env(1000 + i, ev.AttemptStarted(try_no=1, worker="w"), key),
            _env(2000 + i, _scored(1), key),
        ]
    assert fold(RUN, envs) == fold(RUN, list(envs))
    # Incremental = batch: folding a prefix then the rest equals folding everything.
    cut = min(cut, len(envs))
    head = fold(RUN, envs[:cut])
    assert {k: a.planned for k, a in fold(RUN, envs).attempts.items()} | {
        k: a.planned for k, a in head.attempts.items()
    } == {k: a.planned for k, a in fold(RUN, envs).attempts.items()}
    todo = plan(fold(RUN, envs), max_tries=3)
    done = {envs[i].attempt_key for i in scored if i < n}
    assert {p.key for p in todo} == {e.attempt_key for e in envs[:n]} - done
    assert [p.order for p in todo] == sorted(p.order for p in todo)
