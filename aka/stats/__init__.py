"""A/B statistics and reward export over the attempt table (the ``scores`` view).

Every function here is pure: it takes an attempt table (a polars DataFrame or a pyarrow
Table, columns in :data:`ATTEMPT_COLUMNS`) and returns values; only
:func:`export_rewards` writes a file. See docs/statistics.md and docs/rewards.md.
"""

from aka.stats import rewards
from aka.stats._attempts import (
    ATTEMPT_COLUMNS,
    AttemptTable,
    attempt_frame,
    final_attempts,
    select_attempts,
)
from aka.stats._compare import Comparison, Paired, TaskDelta, Verdict, compare, verdict_rule
from aka.stats._estimators import (
    VarianceSplit,
    bootstrap_mean_ci,
    min_detectable_effect,
    pass_at_k,
)
from aka.stats._export import (
    EXPORT_FORMATS,
    HEAD_COLUMNS,
    ExportFormat,
    export_rewards,
    reward_frame,
    write_parquet_atomic,
)
from aka.stats._render import render_table
from aka.stats._summary import DEFAULT_FLOOR, FAST_P_THRESHOLDS, ArmSummary

__all__ = [
    "ATTEMPT_COLUMNS",
    "DEFAULT_FLOOR",
    "EXPORT_FORMATS",
    "FAST_P_THRESHOLDS",
    "HEAD_COLUMNS",
    "ArmSummary",
    "AttemptTable",
    "Comparison",
    "ExportFormat",
    "Paired",
    "TaskDelta",
    "VarianceSplit",
    "Verdict",
    "attempt_frame",
    "bootstrap_mean_ci",
    "compare",
    "export_rewards",
    "final_attempts",
    "min_detectable_effect",
    "pass_at_k",
    "render_table",
    "reward_frame",
    "rewards",
    "select_attempts",
    "verdict_rule",
    "write_parquet_atomic",
]
