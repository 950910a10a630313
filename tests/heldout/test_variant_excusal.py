"""Which failed held-out checks are weighed against the task's own code, and what that
excuses: only input-variant cases (an ``aka_`` key) that the starting code, judged on the
same inputs, fails as well. Pure functions over verdicts; the evaluator's path through
them is in ``tests/core/test_task_failures.py``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from aka.eval import Verdict, excuse_variants, keep_excused, missed_variants, unexcused_shapes

PLAIN = {"N": 4099}
STRESSED = {"N": 4099, "aka_stressed": 1}
SHIFTED = {"N": 4099, "aka_shifted": 1}
NAN = "output has NaN or Inf"


def _case(shape: dict[str, int], ok: bool, seed: int = 7) -> dict[str, Any]:
    return {"shape": shape, "dtype": "float32", "seed": seed, "ok": ok,
            "max_abs_err": None, "error": None if ok else NAN}  # fmt: skip


def _verdict(*cases: dict[str, Any], flags: tuple[str, ...] = (), compiled: bool = True,
             error: str | None = "") -> Verdict:  # fmt: skip
    failing = [c for c in cases if not c["ok"]]
    if error == "":
        error = failing[0]["error"] if failing else None
    return Verdict(
        compiled={"ok": compiled}, cases=list(cases), timing=[], device={}, flags=list(flags),
        evidence=[], correct=compiled and not failing and not flags, error=error, network="",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("held", "weighed"),
    [
        (_verdict(_case(PLAIN, True), _case(STRESSED, False)), True),
        (_verdict(_case(PLAIN, True), _case(STRESSED, False), _case(SHIFTED, False)), True),
        (_verdict(_case(PLAIN, False), _case(STRESSED, False)), False),  # a plain case too
        (_verdict(_case(PLAIN, True), _case(STRESSED, False), flags=("input_replay",)), False),
        (_verdict(_case(PLAIN, True), _case(STRESSED, False), compiled=False), False),
        (_verdict(_case(PLAIN, True), _case(STRESSED, False), error="process crashed"), False),
        (_verdict(_case(PLAIN, True), _case(STRESSED, True)), False),  # it passed
    ],
)
def test_only_a_check_failed_by_variant_cases_alone_is_weighed(
    held: Verdict, weighed: bool
) -> None:
    """A flag, a process error, a failed compile or a failed plain case is the candidate's
    whatever the task's own code does."""
    assert missed_variants(held) is weighed


def test_a_variant_the_task_s_own_code_fails_too_is_excused_and_kept() -> None:
    held = _verdict(_case(PLAIN, True), _case(STRESSED, False), _case(SHIFTED, False))
    own = _verdict(_case(PLAIN, True), _case(STRESSED, False), _case(SHIFTED, True))
    partly = excuse_variants(held, own)
    assert not partly.correct and partly.error == NAN  # the shifted case the task meets
    assert [c.get("excused", False) for c in partly.cases] == [False, True, False]
    assert len(partly.cases) == len(held.cases)  # kept for an audit, not dropped
    both = _verdict(_case(PLAIN, True), _case(STRESSED, False), _case(SHIFTED, False))
    whole = excuse_variants(held, both)
    assert whole.correct and whole.error is None
    assert [c.get("excused", False) for c in whole.cases] == [False, True, True]
    assert any("not counted" in n and "aka_stressed" in n for n in whole.notes)


@pytest.mark.parametrize(
    "own",
    [
        _verdict(_case(PLAIN, True), _case(STRESSED, False), flags=("forbidden_api",)),
        _verdict(_case(PLAIN, True), _case(STRESSED, False), compiled=False),
        _verdict(_case(PLAIN, True), _case(STRESSED, True)),
        _verdict(_case(PLAIN, True), _case(STRESSED, False, seed=8)),  # other inputs
    ],
)
def test_nothing_is_excused_by_a_task_run_that_is_not_clean_or_not_the_same(own: Verdict) -> None:
    """The task's own run must have compiled, raised no flag, and failed the very case
    (shape, dtype and seed: the same inputs)."""
    held = _verdict(_case(PLAIN, True), _case(STRESSED, False))
    assert excuse_variants(held, own) == held


def test_a_timed_re_evaluation_retimes_only_the_shapes_with_no_excused_case() -> None:
    """The excused verdict dropped its timing (a failed case skipped the settling); the
    retimed run covers the shapes left, and the excused cases ride along for an audit."""
    held = _verdict(_case(PLAIN, True), _case(STRESSED, False), _case(SHIFTED, True))
    excused = excuse_variants(held, _verdict(_case(STRESSED, False)))
    assert excused.correct
    assert unexcused_shapes([PLAIN, STRESSED, SHIFTED], excused) == [PLAIN, SHIFTED]
    timing = [{"shape": PLAIN, "candidate_s": 1.0}, {"shape": SHIFTED, "candidate_s": 1.0}]
    settled = replace(_verdict(_case(PLAIN, True), _case(SHIFTED, True)), timing=timing)
    kept = keep_excused(settled, excused)
    assert kept.correct and kept.timing == timing
    assert [c["shape"] for c in kept.cases if c.get("excused")] == [STRESSED]
    assert any("not counted" in n for n in kept.notes)


def test_a_retimed_run_that_fails_is_the_candidate_s() -> None:
    """A case the first run passed and the retimed run fails (a candidate that behaves
    differently once timed) is never excused: the failed run is the verdict."""
    excused = excuse_variants(
        _verdict(_case(PLAIN, True), _case(STRESSED, False)), _verdict(_case(STRESSED, False))
    )
    failed = _verdict(_case(PLAIN, False))
    assert keep_excused(failed, excused) is failed
    assert not keep_excused(failed, excused).correct
