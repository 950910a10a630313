"""Everything behind one attempt, gathered for its page: events, blobs and the audit.

The source files come from :func:`aka.audit.audit`, which re-hashes every blob against
its digest, so the page shows the bytes that were evaluated and says whether they
verify. An attempt that is still running has no audit yet; its transcript so far is
still shown.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, cast

from aka import events as ev
from aka.audit import Audit, audit
from aka.dashboard._data import Row, rows
from aka.errors import NotFoundError
from aka_ledger import Envelope, Ledger

MAX_INLINE = 200_000
"""Bytes of a blob shown inline on a page; longer texts are cut (the blob link has all)."""


@dataclass
class Try:
    """One try of an attempt: what the agent did and how it ended."""

    try_no: int
    worker: str = ""
    status: str = ""
    error: str | None = None
    prompt_digest: str | None = None
    prompt: str = ""
    agent: ev.AgentFinished | None = None
    items: list[ev.AgentItemRecord] = field(default_factory=list)


@dataclass
class Detail:
    """One attempt's page data."""

    run_id: str
    attempt_key: str
    row: Row
    tries: list[Try]
    audit: Audit | None
    sources: dict[str, str]
    measurements: list[Row]
    cases: list[Row]
    self_scores: list[Row]


class RunEvents:
    """A read-only ledger stand-in that answers ``events()`` from one read of a run.

    A static report gathers every attempt of a run; without this each attempt's audit
    would re-read the whole run's events (quadratic in attempts). Blobs still come from
    the real content store.
    """

    def __init__(self, ledger: Ledger, run_id: str) -> None:
        self.cas = ledger.cas
        self.root = ledger.root
        self.run_id = run_id
        self._by_type: dict[str, list[Envelope]] = {}
        for e in ledger.events(run_id=run_id):
            self._by_type.setdefault(e.type, []).append(e)

    def events(
        self, *, run_id: str | None = None, types: Collection[str] | None = None
    ) -> list[Envelope]:
        """The run's events of ``types``, in ledger order (``run_id`` must be this run)."""
        assert run_id in (None, self.run_id), run_id
        if types is None:
            return sorted(
                (e for es in self._by_type.values() for e in es),
                key=lambda e: (e.time, e.writer_id, e.seq),
            )
        picked = [e for t in types for e in self._by_type.get(t, [])]
        return sorted(picked, key=lambda e: (e.time, e.writer_id, e.seq))

    def as_ledger(self) -> Ledger:
        """This stand-in typed as the ledger the audit and detail code read from."""
        return cast(Ledger, self)


def text_of(ledger: Ledger, digest: str | None) -> str:
    """A blob as text (replacement characters for bad bytes; cut at :data:`MAX_INLINE`)."""
    if not digest:
        return ""
    try:
        data = ledger.cas.get(digest)
    except Exception:  # a missing blob shows as empty; `aka ledger verify` reports it
        return ""
    cut = data[:MAX_INLINE].decode(errors="replace")
    return cut + ("\n… (cut; open the blob for the rest)" if len(data) > MAX_INLINE else "")


_TRY_EVENTS = (
    ev.AttemptStarted,
    ev.AgentStarted,
    ev.AgentOutput,
    ev.AgentFinished,
    ev.AttemptFinished,
)


def _tries(ledger: Ledger, run_id: str, key: str) -> list[Try]:
    types = [cls.__name__ for cls in _TRY_EVENTS]
    by_no: dict[int, Try] = {}
    for e in ledger.events(run_id=run_id, types=types):
        p = e.payload
        if e.attempt_key != key or not isinstance(p, _TRY_EVENTS):
            continue
        t = by_no.setdefault(p.try_no, Try(p.try_no))
        if isinstance(p, ev.AttemptStarted):
            t.worker = p.worker
        elif isinstance(p, ev.AgentStarted):
            t.prompt_digest = p.prompt
            t.prompt = text_of(ledger, p.prompt)
        elif isinstance(p, ev.AgentOutput):
            t.items.extend(p.items)
        elif isinstance(p, ev.AgentFinished):
            t.agent = p
        elif isinstance(p, ev.AttemptFinished):
            t.status, t.error = p.status, p.error
    return [by_no[k] for k in sorted(by_no)]


MEASUREMENTS_SQL = """
SELECT m.eval_id, m.shape, m.dtype, m.baseline_s, m.candidate_s, m.speedup, m.speedup_ci_low,
       m.speedup_ci_high, m.samples, m.method, m.raw_digest
FROM measurements m WHERE m.run_id = ?
"""

CASES_SQL = """
SELECT eval_id, CAST(c->>'$.shape' AS VARCHAR) AS shape, c->>'$.dtype' AS dtype,
       CAST(c->>'$.seed' AS INTEGER) AS seed, CAST(c->>'$.ok' AS BOOLEAN) AS ok,
       CAST(c->>'$.max_abs_err' AS DOUBLE) AS max_abs_err, c->>'$.error' AS error,
       coalesce(CAST(c->>'$.heldout' AS BOOLEAN), false) AS heldout
FROM (SELECT payload->>'$.eval_id' AS eval_id, unnest(CAST(payload->'$.cases' AS JSON[])) AS c
      FROM events WHERE type = 'CorrectnessChecked' AND run_id = ?)
"""

SELF_SQL = """
SELECT attempt_key, turn, try_no, compiled, correct, speedup, score, error, candidate
FROM all_scores WHERE run_id = ? AND purpose = 'self' ORDER BY try_no, turn
"""


@dataclass
class RunRows:
    """A run's measurements and correctness cases by eval id, self-evaluations by attempt.

    Three queries per run instead of three per attempt: a static report of a large run
    makes its per-attempt sections from one set.
    """

    measurements: dict[str, list[Row]]
    cases: dict[str, list[Row]]
    self_scores: dict[str, list[Row]]


def _group(found: list[Row], key: str) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for r in found:
        out.setdefault(str(r.pop(key)), []).append(r)
    return out


def run_rows(con: Any, run_id: str) -> RunRows:
    """Gather :class:`RunRows` for one run."""
    return RunRows(
        measurements=_group(rows(con, MEASUREMENTS_SQL, [run_id]), "eval_id"),
        cases=_group(rows(con, CASES_SQL, [run_id]), "eval_id"),
        self_scores=_group(rows(con, SELF_SQL, [run_id]), "attempt_key"),
    )


def attempt_detail(
    ledger: Ledger, con: Any, run_id: str, key: str, row: Row, pre: RunRows | None = None
) -> Detail:
    """Gather one attempt's page: tries, transcript, audit, sources and measurements.

    Args:
        ledger: the ledger (blobs and decoded events).
        con: a connection from :func:`aka.report.connect`.
        run_id: the run.
        key: the attempt key.
        row: the attempt's row from :func:`aka.dashboard._data.attempts`.
        pre: the run's :class:`RunRows`, when the caller gathers many attempts.
    """
    pre = run_rows(con, run_id) if pre is None else pre
    try:
        checked: Audit | None = audit(ledger, key, run_id=run_id)
    except NotFoundError:
        checked = None
    sources: dict[str, str] = {}
    measurements: list[Row] = []
    cases: list[Row] = []
    if checked is not None:
        for f in checked.files:
            if f.role == "candidate":
                sources[f.path] = text_of(ledger, f.digest)
        eval_id = checked.score.eval_id
        measurements = pre.measurements.get(eval_id, [])
        cases = pre.cases.get(eval_id, [])
    return Detail(
        run_id=run_id,
        attempt_key=key,
        row=row,
        tries=_tries(ledger, run_id, key),
        audit=checked,
        sources=sources,
        measurements=measurements,
        cases=cases,
        self_scores=pre.self_scores.get(key, []),
    )
