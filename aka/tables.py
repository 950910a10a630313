"""The attempt table: the ``scores`` view plus texts from the content store.

:mod:`aka.stats` computes comparisons and reward exports from this one table
(columns in :data:`aka.stats.ATTEMPT_COLUMNS`). Final candidates are ``turn == 0``;
each self-evaluation an agent ran during an attempt is a row with its turn number, for
multi-turn RL.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from aka.report import connect
from aka.stats import ATTEMPT_COLUMNS
from aka_ledger import Ledger

TURNS_SQL = """
SELECT s.run_id, a.arm, a.agent, a.task, a.repeat, s.attempt_key, s.try_no,
       s.compiled, s.correct, s.speedup, s.score, s.reward_components, s.policy, s.hack_flags,
       s.candidate, NULL AS diff, s.task_digest, s.harness_digest, s.device_name AS device,
       r.config_digest, f.arm_digest, f.prompt_digest,
       NULL::BIGINT AS tokens_in, NULL::BIGINT AS tokens_out, NULL::DOUBLE AS cost_usd,
       NULL::DOUBLE AS agent_wall_s, s.eval_wall_s,
       NULL::DOUBLE AS baseline_time_s, NULL::DOUBLE AS candidate_time_s,
       NULL::DOUBLE AS speedup_ci_low, NULL::DOUBLE AS speedup_ci_high, 0 AS trials,
       s.turn, s.try_no > 1 AS infra_retry
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
    """Final attempts (and self-evaluation turns) of ``run_ids`` (default: every run)."""
    con = connect(ledger)
    if run_ids is None:
        run_ids = [r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()]
    finals = pl.from_arrow(
        con.sql(
            "SELECT * FROM scores WHERE run_id IN (SELECT unnest(?))", params=[run_ids]
        ).to_arrow_table()
    )
    frames = [finals]
    if turns:
        frames.append(pl.from_arrow(con.sql(TURNS_SQL, params=[run_ids]).to_arrow_table()))
    out: list[pl.DataFrame] = []
    for frame in frames:
        assert isinstance(frame, pl.DataFrame)
        prompts = [_text(ledger, d) for d in frame["prompt_digest"].to_list()]
        diffs = frame["diff"].to_list() if "diff" in frame.columns else [None] * frame.height
        frame = frame.with_columns(
            pl.Series("prompt", prompts, dtype=pl.String),
            pl.Series("response", [_text(ledger, d) for d in diffs], dtype=pl.String),
        )
        out.append(frame.select([pl.col(c).cast(t) for c, t in ATTEMPT_COLUMNS.items()]))
    return pl.concat(out, how="vertical")
