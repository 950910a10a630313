"""A second timing that settles a suspicion is judged as the first timing was.

The evaluator times the candidate once more in a fresh process when its baseline ran
slower beside it than alone, or when its timed calls look like replays, and keeps the
lower of the two speedups. That process only times, and a candidate can tell: one that
returns garbage there would leave the first timing's speedup standing, forged or not.
Its audited outputs go to a checker and its findings count (``aka.eval._again``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from redteam_corpus import force_first_suspicion, scale_job

from aka.eval import _detect
from aka.eval._pipeline import run_job

POOL = {"target_rel_ci": 0.05, "max_time_s": 0.4, "min_samples": 40}
# Honest where its calls are checked; garbage in a process that only times. It tells
# them apart by its first four calls: an evaluation's process opens with two cases' twin
# calls, where a timing-only process's warm-up calls each draw fresh values (the draw is
# fast, so nothing is pooled; from a pool of eight sets, both pairs would match by chance
# one time in 64, and the tell would misfire).
TIMED_ONLY_GARBAGE = """import torch

_seen = []


def scale(x):
    if len(_seen) < 4:
        _seen.append(x.clone())
    twins = len(_seen) == 4 and all(torch.equal(_seen[i], _seen[i + 1]) for i in (0, 2))
    if len(_seen) == 4 and not twins:
        return torch.empty_like(x)
    return x * 2 + 1
"""


def _judged(tmp_path: Path) -> Any:
    job, root = scale_job(tmp_path, TIMED_ONLY_GARBAGE)
    return run_job(dataclasses.replace(job, timing=POOL), root)


def test_the_replay_check_s_second_timing_is_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = force_first_suspicion(monkeypatch)
    v = _judged(tmp_path)
    assert len(calls) == 2, calls  # it was timed again
    assert not v.correct and "timed_output_wrong" in v.flags, (v.flags, v.error)
    assert any("timed again" in e for e in v.evidence), v.evidence


def test_the_slowed_baseline_check_s_second_timing_is_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    def looks_slowed(timings: Any, clean: Any, slack: float, spread: float = 0.1) -> Any:
        calls.append(len(timings))
        return [(0, clean[0]["pair"], "shape {'N': 65536}: forced")]

    monkeypatch.setattr(_detect, "baseline_slowed", looks_slowed)
    v = _judged(tmp_path)
    assert calls, "the slowed-baseline check did not run"
    assert not v.correct and "timed_output_wrong" in v.flags, (v.flags, v.error)
    assert any("timed again" in e for e in v.evidence), v.evidence
