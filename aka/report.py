"""Reports: one row per attempt, computed by DuckDB over the arena's views."""

from __future__ import annotations

from typing import Any

from aka.errors import NotFoundError
from aka.views import install_views
from aka_ledger import Ledger

REPORT_SQL = """
SELECT a.task, a.arm, a.agent, a.repeat,
       s.compiled, s.correct, s.speedup, s.score,
       coalesce(se.n, 0) AS self_evals,
       s.candidate, s.try_no AS tries,
       CASE WHEN s.attempt_key IS NOT NULL THEN s.error
            WHEN f.error IS NOT NULL THEN 'not scored: ' || f.error
            WHEN st.attempt_key IS NULL THEN 'not run yet'
            ELSE 'not scored yet: started, no final evaluation' END AS error,
       r.arm_digest, a.attempt_key
FROM attempts a
LEFT JOIN scores s USING (run_id, attempt_key)
LEFT JOIN arms r ON r.run_id = a.run_id AND r.arm = a.arm
LEFT JOIN (
    SELECT run_id, attempt_key, arg_max(payload->>'$.error', time) AS error
    FROM events WHERE type = 'AttemptFinished' AND payload->>'$.status' = 'error'
    GROUP BY run_id, attempt_key
) f USING (run_id, attempt_key)
LEFT JOIN (
    SELECT DISTINCT run_id, attempt_key FROM events WHERE type = 'AttemptStarted'
) st USING (run_id, attempt_key)
LEFT JOIN (
    SELECT run_id, attempt_key, count(*) AS n FROM all_scores WHERE purpose = 'self'
    GROUP BY run_id, attempt_key
) se USING (run_id, attempt_key)
WHERE a.run_id = ?
ORDER BY a."order"
"""
"""The report: one row per planned attempt. ``self_evals`` counts the agent's own
evaluations (``aka eval``) recorded for the attempt, finished or not, so an attempt
that was interrupted before its final score still shows the work done in it."""


def connect(ledger: Ledger) -> Any:
    """A DuckDB connection with the arena's views installed."""
    return install_views(ledger.connect())


def resolve_run(ledger: Ledger, run: str | None) -> str:
    """A run id from an id, a unique prefix, a label, or None for the latest run."""
    con = connect(ledger)
    rows = con.execute("SELECT run_id, label FROM runs ORDER BY started_at").fetchall()
    if not rows:
        raise NotFoundError(
            "the ledger has no runs", where=str(ledger.root), fix="start one with `aka run CONFIG`"
        )
    if run is None or run == "latest":
        return str(rows[-1][0])
    exact = [r[0] for r in rows if r[0] == run]
    if exact:
        return str(exact[0])
    matches = [r[0] for r in rows if r[0].startswith(run) or r[1] == run]
    if len(matches) == 1:
        return str(matches[0])
    if not matches:
        raise NotFoundError(
            f"no run {run!r}", where=str(ledger.root), fix="`aka status` lists runs"
        )
    raise NotFoundError(f"{run!r} matches {len(matches)} runs", fix="give more of the run id")


def attempt_rows(ledger: Ledger, run_id: str) -> list[dict[str, Any]]:
    """The report: one row per planned attempt, in planned order."""
    cur = connect(ledger).execute(REPORT_SQL, [run_id])
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def run_rows(ledger: Ledger) -> list[dict[str, Any]]:
    """Status of every run."""
    cur = connect(ledger).execute(
        "SELECT run_id, label, status, device, attempts, scored, started_at, finished_at FROM runs ORDER BY started_at"
    )
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
