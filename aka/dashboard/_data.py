"""What the dashboard shows, as plain rows: DuckDB queries over the arena's views.

Each function takes a fresh connection (:func:`aka.report.connect`), so every request
sees the ledger as it is now, live logs included. Aggregates weigh every task the same
and count failures at :data:`aka.stats.DEFAULT_FLOOR`, exactly like ``aka compare``.
"""

from __future__ import annotations

from typing import Any

from aka.errors import NotFoundError
from aka.stats import DEFAULT_FLOOR

Row = dict[str, Any]


def rows(con: Any, sql: str, params: list[Any] | None = None) -> list[Row]:
    """Run ``sql`` and return its rows as dicts."""
    cur = con.execute(sql, params or [])
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


RUNS_SQL = """
SELECT r.run_id, r.label, r.status, r.device, r.policy, r.attempts, r.scored,
       r.started_at, r.finished_at, r.config_digest, r.harness_digest, r.environment_digest,
       (SELECT count(DISTINCT attempt_key) FROM events e WHERE e.run_id = r.run_id
          AND e.type = 'AttemptFinished' AND e.payload->>'$.status' = 'error') AS errors,
       (SELECT string_agg(DISTINCT arm, ', ' ORDER BY arm) FROM attempts a WHERE a.run_id = r.run_id) AS arms,
       (SELECT count(DISTINCT task) FROM attempts a WHERE a.run_id = r.run_id) AS tasks,
       (SELECT max(time) FROM events e WHERE e.run_id = r.run_id) AS last_event
FROM runs r ORDER BY r.started_at DESC
"""


def resolve(con: Any, run: str | None) -> str:
    """A run id from an id, a unique prefix or a label (None or "latest": the newest).

    The rule of :func:`aka.report.resolve_run`, on an open connection so a page makes
    one snapshot of the ledger, not one per lookup.
    """
    found = con.execute("SELECT run_id, label FROM runs ORDER BY started_at").fetchall()
    if not found:
        raise NotFoundError("the ledger has no runs", fix="start one with `aka run CONFIG`")
    if run is None or run == "latest":
        return str(found[-1][0])
    if any(r[0] == run for r in found):
        return run
    matches = [r[0] for r in found if r[0].startswith(run) or r[1] == run]
    if len(matches) == 1:
        return str(matches[0])
    if not matches:
        raise NotFoundError(f"no run {run!r}", fix="the runs page lists every run")
    raise NotFoundError(f"{run!r} matches {len(matches)} runs", fix="give more of the run id")


def runs(con: Any) -> list[Row]:
    """Every run, newest first, with progress counts and its last event time."""
    return rows(con, RUNS_SQL)


LEADERBOARD_SQL = f"""
WITH f AS (
    SELECT run_id, arm, agent, task, attempt_key, score, cost_usd, tokens_in, tokens_out, agent_wall_s,
           coalesce(compiled, false) AS compiled, coalesce(correct, false) AS correct,
           CASE WHEN coalesce(correct, false) AND speedup IS NOT NULL
                THEN ln(greatest(speedup, {DEFAULT_FLOOR})) ELSE ln({DEFAULT_FLOOR}) END AS ls,
           coalesce(correct, false) AND coalesce(speedup, 0) > 1.0 AS fast1
    FROM scores WHERE run_id IN (SELECT unnest(?))
), t AS (
    SELECT run_id, arm, task, avg(compiled::INT) AS compiled, avg(correct::INT) AS correct,
           avg(fast1::INT) AS fast1, avg(score) AS score, avg(ls) AS ls
    FROM f GROUP BY ALL
), spend AS (
    SELECT run_id, arm, string_agg(DISTINCT agent, ', ') AS agent, count(*) AS scored,
           sum(cost_usd) AS cost_usd, sum(tokens_in) AS tokens_in, sum(tokens_out) AS tokens_out,
           sum(agent_wall_s) AS agent_wall_s, max(score) AS best_score,
           arg_max(attempt_key, score) AS best_attempt
    FROM f GROUP BY ALL
), planned AS (
    SELECT run_id, arm, count(*) AS planned, min("order") AS first_order
    FROM attempts WHERE run_id IN (SELECT unnest(?)) GROUP BY ALL
)
SELECT p.run_id, r.label, p.arm, s.agent, p.planned, coalesce(s.scored, 0) AS scored,
       count(t.task) AS tasks, avg(t.compiled) AS compiled, avg(t.correct) AS correct,
       avg(t.fast1) AS fast_1, exp(avg(t.ls)) AS geomean_speedup, avg(t.score) AS mean_score,
       any_value(s.best_score) AS best_score, any_value(s.best_attempt) AS best_attempt,
       any_value(s.cost_usd) AS cost_usd, any_value(s.tokens_in) AS tokens_in,
       any_value(s.tokens_out) AS tokens_out, any_value(s.agent_wall_s) AS agent_wall_s,
       any_value(p.first_order) AS first_order, any_value(r.started_at) AS started_at
FROM planned p
JOIN runs r USING (run_id)
LEFT JOIN spend s USING (run_id, arm)
LEFT JOIN t USING (run_id, arm)
GROUP BY p.run_id, r.label, p.arm, s.agent, p.planned, s.scored
"""


def leaderboard(con: Any, run_ids: list[str]) -> list[Row]:
    """One row per (run, arm): task-averaged rates, floored geomean speedup, spend, best attempt.

    Sorted best first by geometric-mean speedup (arms with nothing scored last).
    """
    out = rows(con, LEADERBOARD_SQL, [run_ids, run_ids])
    return sorted(out, key=lambda r: (r["geomean_speedup"] is None, -(r["geomean_speedup"] or 0)))


def arms_in_order(con: Any, run_id: str) -> list[str]:
    """A run's arms in planned order (the first is the natural side A of an A/B)."""
    sql = 'SELECT arm FROM attempts WHERE run_id = ? GROUP BY arm ORDER BY min("order")'
    return [r["arm"] for r in rows(con, sql, [run_id])]


MATRIX_SQL = f"""
SELECT s.run_id, s.arm, s.task, count(*) AS n,
       sum(coalesce(s.correct, false)::INT) AS n_correct,
       exp(avg(CASE WHEN coalesce(s.correct, false) AND s.speedup IS NOT NULL
                    THEN ln(greatest(s.speedup, {DEFAULT_FLOOR})) ELSE ln({DEFAULT_FLOOR}) END)) AS speedup,
       avg(s.score) AS score, arg_max(s.attempt_key, s.score) AS best_attempt
FROM scores s WHERE s.run_id IN (SELECT unnest(?))
GROUP BY ALL
"""


def matrix(con: Any, run_ids: list[str]) -> list[Row]:
    """Per (task, run, arm): attempts, correct count, floored geomean speedup, mean score."""
    return rows(con, MATRIX_SQL, [run_ids])


ATTEMPTS_SQL = """
WITH last AS (
    SELECT run_id, attempt_key, arg_max(type, time) AS last_type,
           max(CASE WHEN type = 'AttemptStarted' THEN CAST(payload->>'$.try_no' AS INTEGER) END) AS tries,
           arg_max(CASE WHEN type = 'AttemptFinished' THEN payload->>'$.error' END,
                   CASE WHEN type = 'AttemptFinished' THEN time END) AS error
    FROM events WHERE run_id = ? AND attempt_key IS NOT NULL GROUP BY ALL
)
SELECT a.run_id, a.task, a.arm, a.agent, a.repeat, a.attempt_key, a."order",
       s.compiled, s.correct, s.speedup, s.speedup_ci_low, s.speedup_ci_high, s.score,
       s.candidate, s.cost_usd, s.tokens_in, s.tokens_out, s.agent_wall_s, s.eval_wall_s,
       s.hack_flags, coalesce(s.error, l.error) AS error, l.tries, l.last_type,
       CASE WHEN s.attempt_key IS NOT NULL THEN 'scored'
            WHEN l.last_type = 'AttemptFinished' THEN 'error'
            WHEN l.last_type IS NULL THEN 'planned'
            ELSE 'running' END AS state
FROM attempts a
LEFT JOIN scores s USING (run_id, attempt_key)
LEFT JOIN last l USING (run_id, attempt_key)
WHERE a.run_id = ?
ORDER BY a."order"
"""


def attempts(con: Any, run_id: str) -> list[Row]:
    """Every planned attempt of a run with its state (planned, running, scored, error)."""
    return rows(con, ATTEMPTS_SQL, [run_id, run_id])


HELDOUT_SQL = """
WITH h AS (
    SELECT e.attempt_key, e.payload->>'$.task' AS task, e.payload->>'$.role' AS role,
           CAST(s.payload->>'$.correct' AS BOOLEAN) AS correct,
           CAST(s.payload->>'$.speedup' AS DOUBLE) AS speedup, e.time
    FROM events e
    JOIN events s ON s.type = 'Scored' AND s.payload->>'$.eval_id' = e.payload->>'$.eval_id'
    WHERE e.type = 'HeldoutEvaluated' AND e.run_id = ?
      AND e.payload->>'$.device' = (SELECT device FROM runs WHERE run_id = ?)
), newest AS (
    SELECT * FROM h
    QUALIFY row_number() OVER (PARTITION BY role, coalesce(attempt_key, ''), task ORDER BY time DESC) = 1
)
SELECT a.run_id, c.attempt_key, c.task, a.arm, c.correct AS heldout_correct, c.speedup AS heldout_speedup,
       b.correct AS baseline_correct, s.correct AS tuning_correct, s.speedup AS tuning_speedup
FROM newest c
JOIN attempts a ON a.run_id = ? AND a.attempt_key = c.attempt_key
LEFT JOIN newest b ON b.role = 'baseline' AND b.task = c.task
LEFT JOIN scores s ON s.run_id = ? AND s.attempt_key = c.attempt_key
WHERE c.role = 'candidate'
ORDER BY a."order"
"""

QUADRANTS = ("both_pass", "regression", "improvement", "both_fail")


def quadrant(baseline_correct: bool | None, heldout_correct: bool | None) -> str | None:
    """Held-out quadrant of an attempt (the rule of ``aka heldout``)."""
    if baseline_correct is None or heldout_correct is None:
        return None
    if baseline_correct:
        return "both_pass" if heldout_correct else "regression"
    return "improvement" if heldout_correct else "both_fail"


def heldout(con: Any, run_id: str) -> list[Row] | None:
    """Held-out rows of a run (with ``quadrant``), or None when none were recorded."""
    has = con.execute(
        "SELECT count(*) FROM events WHERE type = 'HeldoutEvaluated' AND run_id = ?", [run_id]
    ).fetchone()[0]
    if not has:
        return None
    out = rows(con, HELDOUT_SQL, [run_id, run_id, run_id, run_id])
    for r in out:
        r["quadrant"] = quadrant(r["baseline_correct"], r["heldout_correct"])
    return out
