"""Audit: from a score down to the exact bytes that were evaluated, checked against the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import blake3

from aka import events as ev
from aka.errors import InputError, NotFoundError
from aka_ledger import Ledger


@dataclass(frozen=True)
class AuditedFile:
    """One file behind a score, with its digest re-checked."""

    role: str
    path: str
    digest: str
    size: int
    verified: bool


@dataclass
class Audit:
    """Everything behind one attempt's final score."""

    run_id: str
    attempt_key: str
    score: ev.Scored
    evaluation: ev.EvaluationStarted
    diff: str | None
    files: list[AuditedFile] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every file's bytes hash to the digest the events recorded."""
        return all(f.verified for f in self.files)


def _verify(ledger: Ledger, digest: str) -> bool:
    try:
        data = ledger.cas.get(digest)
    except Exception:
        return False
    return f"b3:{blake3.blake3(data).hexdigest()}" == digest


def find_final(
    ledger: Ledger, attempt: str, run_id: str | None
) -> tuple[str, str, ev.Scored, ev.EvaluationStarted]:
    """Locate an attempt's final score by attempt key (optionally within a run) or eval id.

    Attempt keys repeat across runs of one config (they name task, arm and repeat), so
    a key found in several runs without ``run_id`` is an error that lists them, never
    a silent pick of one.

    Raises:
        NotFoundError: no such scored attempt.
        InputError: the key is scored in more than one run and ``run_id`` is None.
    """
    envs = ledger.events(run_id=run_id, types=["Scored", "EvaluationStarted"])
    starts = {e.payload.eval_id: e for e in envs if isinstance(e.payload, ev.EvaluationStarted)}
    found: dict[str, tuple[str, str, ev.Scored, ev.EvaluationStarted]] = {}
    for e in envs:
        p = e.payload
        if (
            isinstance(p, ev.Scored)
            and p.purpose == "final"
            and attempt in (e.attempt_key, p.eval_id)
            and e.run_id not in found
        ):
            start = starts[p.eval_id].payload
            assert isinstance(start, ev.EvaluationStarted)
            found[e.run_id] = (e.run_id, e.attempt_key or "", p, start)
    if len(found) == 1:
        return next(iter(found.values()))
    if found:
        raise InputError(
            f"attempt {attempt!r} is scored in {len(found)} runs: {', '.join(found)}",
            fix=f"pass --run with one of them, e.g. `aka audit {attempt} --run {next(iter(found))}`",
        )
    for e in ledger.events(run_id=run_id, types=["AttemptFinished"]):
        p = e.payload
        if e.attempt_key == attempt and isinstance(p, ev.AttemptFinished) and p.error:
            raise NotFoundError(
                f"attempt {attempt!r} of run {e.run_id!r} was never evaluated: {p.error}",
                where=str(ledger.root),
                fix="nothing ran, so there are no files to audit; the response is the blob in "
                "its AgentFinished event's transcript (`aka sql` over events)",
            )
    raise NotFoundError(
        f"no scored attempt {attempt!r}" + (f" in run {run_id!r}" if run_id else ""),
        where=str(ledger.root),
        fix="use an attempt key from `aka report RUN --format json` (column attempt_key)",
    )


def audit(ledger: Ledger, attempt: str, *, run_id: str | None = None) -> Audit:
    """Collect and verify the candidate, task and harness files behind a score."""
    rid, key, scored, start = find_final(ledger, attempt, run_id)
    diff = None
    for e in ledger.events(run_id=rid, types=["CandidateCaptured"]):
        p = e.payload
        if (
            e.attempt_key == key
            and isinstance(p, ev.CandidateCaptured)
            and p.tree == start.candidate
        ):
            diff = ledger.cas.get(p.diff).decode(errors="replace")
    result = Audit(run_id=rid, attempt_key=key, score=scored, evaluation=start, diff=diff)
    for role, tree in (
        ("candidate", start.candidate),
        ("task", start.task),
        ("harness", start.harness),
    ):
        for entry in ledger.cas.read_tree(tree):
            result.files.append(
                AuditedFile(
                    role, entry.path, entry.digest, entry.size, _verify(ledger, entry.digest)
                )
            )
    return result


def export_candidate(ledger: Ledger, a: Audit, dest: Path) -> None:
    """Write the evaluated candidate files into ``dest`` (for ``replay`` or inspection)."""
    ledger.cas.materialize(a.evaluation.candidate, dest)
