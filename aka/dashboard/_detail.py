"""Everything behind one attempt, gathered for its page: events, blobs and the audit.

The source files come from :func:`aka.audit.audit`, which re-hashes every blob against
its digest, so the page shows the bytes that were evaluated and says whether they
verify. An attempt that is still running has no audit yet; its transcript so far is
still shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aka import events as ev
from aka.audit import Audit, audit
from aka.dashboard._data import Row, rows
from aka.errors import NotFoundError
from aka_ledger import Ledger

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


def _tries(ledger: Ledger, run_id: str, key: str) -> list[Try]:
    types = ["AttemptStarted", "AgentStarted", "AgentOutput", "AgentFinished", "AttemptFinished"]
    by_no: dict[int, Try] = {}
    for e in ledger.events(run_id=run_id, types=types):
        if e.attempt_key != key:
            continue
        p = e.payload
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
SELECT m.shape, m.dtype, m.baseline_s, m.candidate_s, m.speedup, m.speedup_ci_low,
       m.speedup_ci_high, m.samples, m.method, m.raw_digest
FROM measurements m WHERE m.run_id = ? AND m.eval_id = ?
"""

CASES_SQL = """
SELECT CAST(c->>'$.shape' AS VARCHAR) AS shape, c->>'$.dtype' AS dtype,
       CAST(c->>'$.seed' AS INTEGER) AS seed, CAST(c->>'$.ok' AS BOOLEAN) AS ok,
       CAST(c->>'$.max_abs_err' AS DOUBLE) AS max_abs_err, c->>'$.error' AS error
FROM (SELECT unnest(CAST(payload->'$.cases' AS JSON[])) AS c FROM events
      WHERE type = 'CorrectnessChecked' AND run_id = ? AND payload->>'$.eval_id' = ?)
"""

SELF_SQL = """
SELECT turn, try_no, compiled, correct, speedup, score, error, candidate
FROM all_scores WHERE run_id = ? AND attempt_key = ? AND purpose = 'self' ORDER BY try_no, turn
"""


def attempt_detail(ledger: Ledger, con: Any, run_id: str, key: str, row: Row) -> Detail:
    """Gather one attempt's page: tries, transcript, audit, sources and measurements.

    Args:
        ledger: the ledger (blobs and decoded events).
        con: a connection from :func:`aka.report.connect`.
        run_id: the run.
        key: the attempt key.
        row: the attempt's row from :func:`aka.dashboard._data.attempts`.
    """
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
        measurements = rows(con, MEASUREMENTS_SQL, [run_id, eval_id])
        cases = rows(con, CASES_SQL, [run_id, eval_id])
    return Detail(
        run_id=run_id,
        attempt_key=key,
        row=row,
        tries=_tries(ledger, run_id, key),
        audit=checked,
        sources=sources,
        measurements=measurements,
        cases=cases,
        self_scores=rows(con, SELF_SQL, [run_id, key]),
    )
