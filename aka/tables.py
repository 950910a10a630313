"""The attempt table: the ``scores`` view plus texts from the content store.

:mod:`aka.stats` computes comparisons and reward exports from this one table
(columns in :data:`aka.stats.ATTEMPT_COLUMNS`, then :data:`TEXT_COLUMNS`). Final
candidates are ``turn == 0``; each self-evaluation an agent ran during an attempt is a
row with its turn number, for multi-turn RL, carrying that turn's action (the candidate's
diff as ``response``, the model's ``message``) and the ``feedback`` it got
(:mod:`aka.turns`).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from aka.report import connect
from aka.stats import ATTEMPT_COLUMNS
from aka.turns import TurnTexts
from aka_ledger import Ledger

TEXT_COLUMNS: tuple[str, ...] = ("message", "feedback")
"""Per row: what the model said in that turn, and the feedback its candidate got."""

FINAL_EVALS_SQL = """
SELECT run_id, attempt_key, try_no, any_value(eval_id) AS eval_id FROM all_scores
WHERE purpose = 'final' AND run_id IN (SELECT unnest(?)) GROUP BY ALL
"""

TURNS_SQL = """
SELECT s.run_id, a.arm, a.agent, a.task, a.repeat, s.attempt_key, s.try_no,
       s.compiled, s.correct, s.speedup, s.score, s.reward_components, s.policy, s.hack_flags,
       s.candidate, NULL AS diff, s.task_digest, s.harness_digest, s.device_name AS device,
       r.config_digest, f.arm_digest, f.prompt_digest,
       NULL::BIGINT AS tokens_in, NULL::BIGINT AS tokens_out, NULL::DOUBLE AS cost_usd,
       NULL::DOUBLE AS agent_wall_s, s.eval_wall_s,
       NULL::DOUBLE AS baseline_time_s, NULL::DOUBLE AS candidate_time_s,
       NULL::DOUBLE AS speedup_ci_low, NULL::DOUBLE AS speedup_ci_high, 0 AS trials,
       s.turn, s.try_no > 1 AS infra_retry, s.eval_id
FROM all_scores s
JOIN attempts a USING (run_id, attempt_key)
JOIN runs r USING (run_id)
LEFT JOIN scores f USING (run_id, attempt_key)
WHERE s.purpose = 'self' AND s.run_id IN (SELECT unnest(?))
"""


def _text(ledger: Ledger, digest: Any) -> str:
    if not digest:
        return ""
    try:
        return ledger.cas.get(str(digest)).decode(errors="replace")
    except Exception:  # a missing blob is reported by `aka ledger verify`, not here
        return ""


def attempt_table(
    ledger: Ledger, run_ids: list[str] | None = None, *, turns: bool = True
) -> pl.DataFrame:
    """Final attempts (and self-evaluation turns) of ``run_ids`` (default: every run).

    With ``turns`` the rows also carry each turn's ``message`` and ``feedback`` (read from
    the agents' streams and the evaluations); without, those are empty (comparisons never
    read them).
    """
    con = connect(ledger)
    if run_ids is None:
        run_ids = [r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()]
    finals = pl.from_arrow(
        con.sql(
            "SELECT * FROM scores WHERE run_id IN (SELECT unnest(?))", params=[run_ids]
        ).to_arrow_table()
    )
    assert isinstance(finals, pl.DataFrame)
    frames = [finals]
    texts = TurnTexts(ledger, run_ids if turns else [])
    if turns:
        evals = pl.from_arrow(con.sql(FINAL_EVALS_SQL, params=[run_ids]).to_arrow_table())
        assert isinstance(evals, pl.DataFrame)
        frames = [finals.join(evals, on=["run_id", "attempt_key", "try_no"], how="left")]
        turn_rows = pl.from_arrow(con.sql(TURNS_SQL, params=[run_ids]).to_arrow_table())
        assert isinstance(turn_rows, pl.DataFrame)
        frames.append(turn_rows)
    out: list[pl.DataFrame] = []
    for frame in frames:
        assert isinstance(frame, pl.DataFrame)
        prompts = [_text(ledger, d) for d in frame["prompt_digest"].to_list()]
        diffs = frame["diff"].to_list() if "diff" in frame.columns else [None] * frame.height
        responses = [
            _text(ledger, d) if d else texts.diff(t, c)  # a turn's diff is made from its trees
            for d, t, c in zip(
                diffs, frame["task_digest"].to_list(), frame["candidate"].to_list(), strict=True
            )
        ]
        rows = frame.select(
            "run_id",
            "attempt_key",
            "try_no",
            "turn",
            *(["eval_id"] if "eval_id" in frame.columns else []),
        ).to_dicts()
        messages, feedback = texts.columns(rows)
        frame = frame.with_columns(
            pl.Series("prompt", prompts, dtype=pl.String),
            pl.Series("response", responses, dtype=pl.String),
            pl.Series("message", messages, dtype=pl.String),
            pl.Series("feedback", feedback, dtype=pl.String),
        )
        out.append(
            frame.select(
                *(pl.col(c).cast(t) for c, t in ATTEMPT_COLUMNS.items()),
                *(pl.col(c) for c in TEXT_COLUMNS),
            )
        )
    return pl.concat(out, how="vertical")
