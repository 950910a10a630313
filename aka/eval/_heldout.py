"""The held-out check of a scored evaluation: the candidate again, correctness only, on the
task's held-out shapes, in processes of its own, and its verdict merged into the tuning
evaluation's (:meth:`aka.kinds._kernel.KernelKind.judge` runs it).

Held-out shapes with an input-variant key (:data:`aka.tasks.VARIANT_PREFIX`: an imported
task's stress cases, inputs scaled or moved) ask for what the task's own float32 code met
where the variant was chosen, on the CPU. A GPU's libraries round differently (cuDNN's
convolutions, cuBLAS's GEMMs), and on some problems the starting code itself misses a
variant there. A candidate is never held to more than the task's own code achieves on
the same inputs: where the check fails on variant cases only, the baseline is judged on
the same shapes and seed in processes of its own (:func:`missed_variants`,
:func:`excuse_variants`), and a variant case it fails too does not count, with a note.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from aka.eval import _plan, _warm
from aka.eval._pipeline import Job, Verdict
from aka.tasks import VARIANT_PREFIX

__all__ = [
    "excuse_variants",
    "heldout_job",
    "keep_excused",
    "missed_variants",
    "unexcused_shapes",
    "with_heldout",
]


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


def _variant(case: dict[str, Any]) -> bool:
    return any(str(k).startswith(VARIANT_PREFIX) for k in case.get("shape") or {})


def missed_variants(held: Verdict) -> bool:
    """Whether a held-out check failed by its input-variant cases alone: it compiled,
    raised no flag, and every failing case is a variant's (the error is a case's own). A
    check failed any other way is never excused."""
    failing = [c for c in held.cases if not c.get("ok")]
    return (
        not held.correct and bool(held.compiled.get("ok")) and not held.flags and bool(failing)
        and all(_variant(c) for c in failing) and held.error == failing[0].get("error")
    )  # fmt: skip


def excuse_variants(held: Verdict, own: Verdict) -> Verdict:
    """``held`` (:func:`missed_variants`) with each failing variant case that ``own``, the
    task's own code judged on the same shapes and seed, fails too taken out of the count
    (kept, marked ``excused``, for an audit), and a note naming it.

    Correct again only when no case is left failing; ``own`` must itself be clean (it
    compiled and raised no flag), or nothing is excused. Whatever ``held`` timed is
    dropped: a verdict with a failed case skips the settling of its timing
    (:func:`aka.eval._alone.rebase_slowed`), so no speedup comes from one excused after.
    """
    if not own.compiled.get("ok") or own.flags:
        return held
    theirs = {_case_key(c): bool(c.get("ok")) for c in own.cases}
    cases, excused = [], []
    for c in held.cases:
        if not c.get("ok") and _variant(c) and theirs.get(_case_key(c)) is False:
            cases.append({**c, "excused": True})
            excused.append(f"{c.get('shape')} {c.get('dtype')}")
        else:
            cases.append(c)
    if not excused:
        return held
    left = [c for c in cases if not c.get("ok") and not c.get("excused")]
    notes = [
        f"input variant {e} not counted: the task's own code fails it on this device too"
        for e in dict.fromkeys(excused)
    ]
    return dataclasses.replace(
        held, cases=cases, correct=not left, error=left[0].get("error") if left else None,
        notes=held.notes + notes, timing=[],
    )  # fmt: skip


def unexcused_shapes(shapes: list[dict[str, Any]], excused: Verdict) -> list[dict[str, Any]]:
    """``shapes`` less those with a case :func:`excuse_variants` excused: what a timed
    re-evaluation of a verdict it excused times again (the timing it dropped)."""
    out = {json.dumps(c.get("shape"), sort_keys=True) for c in excused.cases if c.get("excused")}
    return [s for s in shapes if json.dumps(s, sort_keys=True) not in out]


def keep_excused(settled: Verdict, excused: Verdict) -> Verdict:
    """``settled``, the timed run of :func:`unexcused_shapes`, with ``excused``'s excused
    cases and its notes about them kept for an audit. A ``settled`` that failed is
    returned as it is: a case the first run passed and this one failed is the
    candidate's, never excused."""
    if not settled.correct:
        return settled
    cases = [c for c in excused.cases if c.get("excused")]
    notes = [n for n in excused.notes if n not in settled.notes]
    return dataclasses.replace(settled, cases=settled.cases + cases, notes=settled.notes + notes)


def _case_key(case: dict[str, Any]) -> tuple[str, str, Any]:
    return (json.dumps(case.get("shape"), sort_keys=True), str(case.get("dtype")), case.get("seed"))
