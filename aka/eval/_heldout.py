"""The held-out check of a scored evaluation: the candidate again, correctness only, on the
task's held-out shapes, in processes of its own, and its verdict merged into the tuning
evaluation's (:meth:`aka.kinds._kernel.KernelKind.judge` runs it)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from aka.eval import _plan, _warm
from aka.eval._pipeline import Job, Verdict

__all__ = ["heldout_job", "with_heldout"]


def heldout_job(job: Job, held: list[dict[str, int]], root: Path) -> Job:
    """The held-out check of ``job`` (laid out under ``root``): its candidate, correctness
    only, on ``held``.

    Its process builds kernels in a copy of the tree's shared caches (under ``root``,
    gone with the evaluation): whatever it writes there after seeing a held-out input
    never reaches a later evaluation of the same code, whose errors and speed the policy
    is shown.
    """
    caches = _warm.private_caches(root / "cand", root / "heldout-caches")
    return dataclasses.replace(job, shapes=held, time=False, caches=caches,
                               seed=_plan.case_seed(job.seed, "held"))  # fmt: skip


def with_heldout(tuning: Verdict, held: Verdict) -> Verdict:
    """``tuning``'s verdict with its held-out check's (:func:`heldout_job`) merged in.

    The check runs in processes of its own, after ``tuning``'s and only when that one was
    correct, so nothing the candidate did after seeing a held-out input (its timed calls'
    speed, an error it raised or printed, a file it opened) is in what the tuning
    evaluation reports; the policy is told whether it passed and nothing else of it
    (:func:`aka.feedback.render_feedback`). Its cases, flags and error stay in the verdict
    for an audit; a flag it raised counts as any other.
    """
    ok = held.correct
    return dataclasses.replace(
        tuning,
        cases=tuning.cases + [{**c, "heldout": True} for c in held.cases],
        flags=sorted({*tuning.flags, *held.flags}),
        evidence=tuning.evidence + [f"on a held-out shape: {e}" for e in held.evidence],
        correct=tuning.correct and ok,
        error=tuning.error if ok else f"on a held-out shape: {held.error or 'a case failed'}",
        notes=tuning.notes + [f"held-out check: {n}" for n in held.notes],
        heldout_failed=not ok,
        stage_s={**tuning.stage_s, "heldout": round(sum(held.stage_s.values()), 6)},
    )
