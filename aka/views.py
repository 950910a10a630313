"""Typed DuckDB views over the ledger's ``events`` view: the arena's read side.

Every report, comparison and reward table is a query over these views, and ``aka sql``
users can query them directly (docs/views.md, generated from :data:`VIEW_DOCS` and the
views' own columns by ``tools/gen_views_docs.py``, lists them). Views are derived,
never stored: replaying the same events always gives the same tables.
"""

from __future__ import annotations

from typing import Any

VIEWS: dict[str, str] = {
    "runs": """
        SELECT s.run_id,
               s.payload->>'$.label' AS label,
               s.time AS started_at,
               f.time AS finished_at,
               s.payload->>'$.device' AS device,
               s.payload->>'$.policy' AS policy,
               s.payload->>'$.config' AS config_digest,
               s.payload->>'$.harness' AS harness_digest,
               s.payload->>'$.environment' AS environment_digest,
               (SELECT count(*) FROM events e WHERE e.run_id = s.run_id AND e.type = 'AttemptPlanned') AS attempts,
               (SELECT count(DISTINCT e.attempt_key) FROM events e WHERE e.run_id = s.run_id AND e.type = 'Scored'
                  AND e.payload->>'$.purpose' = 'final') AS scored,
               CASE WHEN f.run_id IS NULL THEN 'running' ELSE 'finished' END AS status
        FROM events s
        LEFT JOIN (SELECT run_id, max(time) AS time FROM events WHERE type = 'RunFinished' GROUP BY run_id) f
          ON f.run_id = s.run_id
        WHERE s.type = 'RunStarted'
    """,
    "attempts": """
        SELECT run_id, attempt_key,
               payload->>'$.task' AS task,
               payload->>'$.arm' AS arm,
               payload->>'$.agent' AS agent,
               CAST(payload->>'$.repeat' AS INTEGER) AS repeat,
               CAST(payload->>'$.order' AS INTEGER) AS "order"
        FROM events WHERE type = 'AttemptPlanned'
    """,
    "evaluations": """
        SELECT e.run_id, e.attempt_key, e.payload->>'$.eval_id' AS eval_id,
               CAST(e.payload->>'$.try_no' AS INTEGER) AS try_no,
               e.payload->>'$.purpose' AS purpose,
               CAST(e.payload->>'$.turn' AS INTEGER) AS turn,
               e.payload->>'$.candidate' AS candidate,
               e.payload->>'$.task' AS task_digest,
               e.payload->>'$.harness' AS harness_digest,
               e.payload->>'$.device' AS device,
               e.time AS started_at,
               s.time AS scored_at
        FROM events e
        LEFT JOIN events s ON s.type = 'Scored' AND s.payload->>'$.eval_id' = e.payload->>'$.eval_id'
        WHERE e.type = 'EvaluationStarted'
    """,
    "measurements": """
        SELECT run_id, attempt_key, payload->>'$.eval_id' AS eval_id,
               payload->>'$.device' AS device_digest,
               coalesce(payload->>'$.device_kind', payload->>'$.device') AS device_kind,
               CAST(m->>'$.shape' AS VARCHAR) AS shape,
               m->>'$.dtype' AS dtype,
               CAST(m->>'$.baseline_s' AS DOUBLE) AS baseline_s,
               CAST(m->>'$.candidate_s' AS DOUBLE) AS candidate_s,
               CAST(m->>'$.speedup' AS DOUBLE) AS speedup,
               CAST(m->'$.speedup_ci[0]' AS DOUBLE) AS speedup_ci_low,
               CAST(m->'$.speedup_ci[1]' AS DOUBLE) AS speedup_ci_high,
               CAST(m->>'$.samples' AS INTEGER) AS samples,
               m->>'$.method' AS method,
               m->>'$.raw' AS raw_digest
        FROM (SELECT *, unnest(CAST(payload->'$.shapes' AS JSON[])) AS m FROM events WHERE type = 'KernelTimed')
    """,
    "all_scores": """
        SELECT sc.run_id, sc.attempt_key, sc.payload->>'$.eval_id' AS eval_id,
               CAST(sc.payload->>'$.try_no' AS INTEGER) AS try_no,
               sc.payload->>'$.purpose' AS purpose,
               CAST(sc.payload->>'$.compiled' AS BOOLEAN) AS compiled,
               CAST(sc.payload->>'$.correct' AS BOOLEAN) AS correct,
               CAST(sc.payload->>'$.speedup' AS DOUBLE) AS speedup,
               CAST(sc.payload->>'$.score' AS DOUBLE) AS score,
               sc.payload->>'$.policy' AS policy,
               -- version 1 events predate policy_spec: the same spec their upcaster gives
               coalesce(sc.payload->>'$.policy_spec',
                        '{"cap": null, "floor": 0.5, "name": "' || (sc.payload->>'$.policy')
                        || '", "thresholds": [1.0], "version": '
                        || coalesce(sc.payload->>'$.policy_version', '1')
                        || ', "zero_on_hack": false}') AS policy_spec,
               CAST(sc.payload->'$.components' AS VARCHAR) AS reward_components,
               CAST(sc.payload->'$.hack_flags' AS VARCHAR[]) AS hack_flags,
               sc.payload->>'$.error' AS error,
               ev.turn, ev.candidate, ev.task_digest, ev.harness_digest, ev.device AS device_name,
               epoch(sc.time) - epoch(ev.started_at) AS eval_wall_s
        FROM events sc JOIN evaluations ev ON ev.eval_id = sc.payload->>'$.eval_id'
        WHERE sc.type = 'Scored'
    """,
    "scores": """
        WITH final AS (
            SELECT * FROM all_scores WHERE purpose = 'final'
            QUALIFY row_number() OVER (PARTITION BY run_id, attempt_key ORDER BY try_no) = 1
        ),
        agent AS (
            SELECT run_id, attempt_key, CAST(payload->>'$.try_no' AS INTEGER) AS try_no,
                   CAST(payload->>'$.tokens_in' AS BIGINT) AS tokens_in,
                   CAST(payload->>'$.tokens_out' AS BIGINT) AS tokens_out,
                   CAST(payload->>'$.cost_usd' AS DOUBLE) AS cost_usd,
                   CAST(payload->>'$.wall_s' AS DOUBLE) AS agent_wall_s,
                   payload->>'$.status' AS agent_status
            FROM events WHERE type = 'AgentFinished'
        ),
        started AS (
            SELECT run_id, attempt_key, CAST(payload->>'$.try_no' AS INTEGER) AS try_no,
                   payload->>'$.prompt' AS prompt_digest, payload->>'$.arm' AS arm_digest
            FROM events WHERE type = 'AgentStarted'
        ),
        cand AS (
            SELECT run_id, attempt_key, CAST(payload->>'$.try_no' AS INTEGER) AS try_no,
                   payload->>'$.diff' AS diff, CAST(payload->>'$.reused_from' AS INTEGER) AS reused_from
            FROM events WHERE type = 'CandidateCaptured'
        ),
        timing AS (
            SELECT eval_id, sum(baseline_s) AS baseline_time_s, sum(candidate_s) AS candidate_time_s,
                   exp(avg(ln(speedup_ci_low))) AS speedup_ci_low, exp(avg(ln(speedup_ci_high))) AS speedup_ci_high,
                   min(samples) AS trials, any_value(device_kind) AS device
            FROM measurements GROUP BY eval_id
        )
        SELECT f.run_id, a.arm, a.agent, a.task, a.repeat, f.attempt_key, f.try_no,
               f.compiled, f.correct, f.speedup, f.score, f.reward_components, f.policy, f.hack_flags, f.error,
               f.candidate, c.diff, f.task_digest, f.harness_digest,
               t.device, r.config_digest,
               coalesce(s.arm_digest, s0.arm_digest) AS arm_digest,
               coalesce(s.prompt_digest, s0.prompt_digest) AS prompt_digest,
               coalesce(g.tokens_in, g0.tokens_in) AS tokens_in,
               coalesce(g.tokens_out, g0.tokens_out) AS tokens_out,
               coalesce(g.cost_usd, g0.cost_usd) AS cost_usd,
               coalesce(g.agent_wall_s, g0.agent_wall_s) AS agent_wall_s,
               f.eval_wall_s, t.baseline_time_s, t.candidate_time_s, t.speedup_ci_low, t.speedup_ci_high,
               coalesce(t.trials, 0) AS trials, 0 AS turn, f.try_no > 1 AS infra_retry, r.label
        FROM final f
        JOIN attempts a USING (run_id, attempt_key)
        JOIN runs r USING (run_id)
        LEFT JOIN cand c ON c.run_id = f.run_id AND c.attempt_key = f.attempt_key AND c.try_no = f.try_no
        LEFT JOIN agent g ON g.run_id = f.run_id AND g.attempt_key = f.attempt_key AND g.try_no = f.try_no
        LEFT JOIN agent g0 ON g0.run_id = f.run_id AND g0.attempt_key = f.attempt_key AND g0.try_no = c.reused_from
        LEFT JOIN started s ON s.run_id = f.run_id AND s.attempt_key = f.attempt_key AND s.try_no = f.try_no
        LEFT JOIN started s0 ON s0.run_id = f.run_id AND s0.attempt_key = f.attempt_key AND s0.try_no = c.reused_from
        LEFT JOIN timing t ON t.eval_id = f.eval_id
    """,
    "arms": """
        SELECT run_id, arm, json_extract_string(payload, '$.arms."' || arm || '"') AS arm_digest
        FROM (SELECT run_id, payload, unnest(json_keys(payload, '$.arms')) AS arm
              FROM events WHERE type = 'RunStarted')
    """,
    "memory": """
        SELECT run_id, attempt_key, CAST(payload->>'$.try_no' AS INTEGER) AS try_no,
               payload->>'$.phase' AS phase, payload->>'$.key' AS memory_key,
               payload->>'$.path' AS path, payload->>'$.tree' AS tree,
               payload->>'$.source_run' AS source_run,
               payload->>'$.source_attempt' AS source_attempt, time
        FROM events WHERE type = 'MemorySnapshotted'
    """,
    "heldout": """
        SELECT h.run_id, h.attempt_key, h.payload->>'$.task' AS task, h.payload->>'$.role' AS role,
               h.payload->>'$.eval_id' AS eval_id, h.payload->>'$.tuning_eval_id' AS tuning_eval_id,
               h.payload->>'$.candidate' AS candidate, h.payload->>'$.task_tree' AS task_digest,
               h.payload->>'$.device' AS device, CAST(h.payload->'$.shapes' AS VARCHAR) AS shapes,
               s.compiled, s.correct, s.speedup, s.error, h.time AS evaluated_at
        FROM events h LEFT JOIN all_scores s ON s.eval_id = h.payload->>'$.eval_id'
        WHERE h.type = 'HeldoutEvaluated'
    """,
    "validations": """
        SELECT run_id AS validation_id, payload->>'$.task' AS task,
               CAST(payload->>'$.ok' AS BOOLEAN) AS ok, payload->>'$.device' AS device,
               payload->>'$.task_tree' AS task_digest, CAST(payload->'$.checks' AS VARCHAR) AS checks,
               CAST(payload->'$.eval_ids' AS VARCHAR[]) AS eval_ids, time AS validated_at
        FROM events WHERE type = 'TaskValidated'
    """,
    "workers": """
        WITH spans AS (
            SELECT run_id, writer_id, min(time) AS first_event, max(time) AS last_event
            FROM events WHERE run_id IS NOT NULL GROUP BY run_id, writer_id
        ), tries AS (
            SELECT run_id, writer_id, attempt_key,
                   max(payload->>'$.worker') FILTER (WHERE type = 'AttemptStarted') AS worker,
                   min(time) FILTER (WHERE type = 'AttemptStarted') AS started,
                   max(time) FILTER (WHERE type = 'AttemptFinished') AS finished
            FROM events WHERE type IN ('AttemptStarted', 'AttemptFinished')
            GROUP BY run_id, writer_id, attempt_key
        ), busy AS (
            SELECT run_id, writer_id, max(worker) AS worker, count(started) AS attempts_started,
                   count(finished) FILTER (WHERE started IS NOT NULL) AS attempts_finished,
                   coalesce(sum(epoch(finished) - epoch(started)), 0.0) AS busy_s
            FROM tries GROUP BY run_id, writer_id
        )
        SELECT b.run_id, b.writer_id, b.worker, b.attempts_started, b.attempts_finished, b.busy_s,
               s.first_event, s.last_event,
               epoch(s.last_event) - epoch(s.first_event) AS span_s,
               CASE WHEN epoch(s.last_event) > epoch(s.first_event)
                    THEN b.busy_s / (epoch(s.last_event) - epoch(s.first_event)) END AS utilization
        FROM busy b JOIN spans s USING (run_id, writer_id)
    """,
}
"""View name -> SQL, in dependency order."""

VIEW_DOCS: dict[str, tuple[str, str]] = {
    "events": ("event", "The ledger's own view: every event once, its payload as JSON."),
    "runs": ("run", "Label, device, policy and provenance digests; planned and scored counts."),
    "attempts": ("planned attempt", "Task, arm, agent, repeat and planned order."),
    "evaluations": (
        "evaluation",
        "Final, self, held-out and validation evaluations: what was measured, and when.",
    ),
    "measurements": (
        "timed shape",
        "Per shape: baseline and candidate medians, speedup and its CI, samples, raw blob.",
    ),
    "all_scores": (
        "Scored event",
        "Every score (final and the agent's own), with the policy spec that made it.",
    ),
    "scores": (
        "attempt's final score",
        "The attempt table of docs/statistics.md: score, components, costs, provenance.",
    ),
    "arms": ("run and arm", "The resolved arm's digest (prompt, files, tools, env, memory)."),
    "memory": ("memory snapshot", "Before/after trees of an arm's memory directory."),
    "heldout": ("held-out evaluation", "A candidate re-measured on held-out shapes."),
    "validations": ("task validation", "Whether a task passed `aka tasks validate`, and why."),
    "workers": (
        "run and writer (a worker process) that started attempts",
        "Attempts started and finished, busy time, span and utilization.",
    ),
}
"""View name -> (one row per, what it holds): the source of docs/views.md."""


def view_columns(con: Any) -> dict[str, list[tuple[str, str]]]:
    """Every view's (column, DuckDB type), from the views themselves (``DESCRIBE``)."""
    names = ["events", *VIEWS]
    return {
        name: [(str(r[0]), str(r[1])) for r in con.execute(f"DESCRIBE {name}").fetchall()]
        for name in names
    }


def install_views(con: Any) -> Any:
    """Create the arena's views on a DuckDB connection that has the ``events`` view."""
    for name, sql in VIEWS.items():
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {sql}")
    return con
