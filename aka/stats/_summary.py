"""Per-arm summaries: what each side achieved, with every task weighing the same.

Attempts are first reduced to one row per task (the mean over its repeats), then
averaged over tasks. A task with eight repeats therefore counts as much as a task with
two, which is what "the task is the cluster" means for a point estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from aka.stats._attempts import effective_log_speedup, final_attempts
from aka.stats._estimators import pass_at_k

FAST_P_THRESHOLDS: tuple[float, ...] = (1.0, 1.2, 1.5, 2.0)
"""The p of fast_p reported for every arm (KernelBench's metric; speedup strictly > p)."""

DEFAULT_FLOOR = 0.5
"""Speedup at which a failed attempt enters the geometric mean (see docs/statistics.md)."""


@dataclass(frozen=True)
class ArmSummary:
    """One side of a comparison, over the tasks both sides share.

    Attributes:
        label: the side's display name ("A", "B", or what the caller passed).
        runs: run ids on this side.
        arms: arm names on this side.
        agents: agent names on this side.
        n_tasks: tasks summarised.
        n_attempts: final attempts (one per run, arm, agent, task and repeat).
        repeats_min: fewest attempts any task has.
        repeats_max: most attempts any task has.
        compiled_rate: task-averaged share of attempts that compiled.
        correct_rate: task-averaged share of attempts that passed correctness.
        correct_rate_first_try: the same, counting each slot's first try only, i.e.
            what the run would report without infrastructure retries.
        infra_retries: attempt rows that were infrastructure retries.
        fast_p: p -> task-averaged share of attempts correct with speedup > p.
        geomean_speedup: geometric mean speedup, failures counted at ``floor``.
        geomean_speedup_correct: geometric mean over correct attempts only (NaN if
            none); shown for context, never used for the verdict, since dropping
            failures flatters an arm that fails often.
        mean_score: task-averaged stored score (under the run's scoring policy).
        pass_at_k: k -> task-averaged unbiased pass@k of correctness, for k up to
            ``repeats_min``.
        tokens_in: total input tokens, over every try (retries cost too).
        tokens_out: total output tokens, over every try.
        cost_usd: total agent cost, over every try.
        agent_wall_s: total agent wall time, over every try.
        eval_wall_s: total evaluation wall time, over every try.
    """

    label: str
    runs: tuple[str, ...]
    arms: tuple[str, ...]
    agents: tuple[str, ...]
    n_tasks: int
    n_attempts: int
    repeats_min: int
    repeats_max: int
    compiled_rate: float
    correct_rate: float
    correct_rate_first_try: float
    infra_retries: int
    fast_p: dict[str, float]
    geomean_speedup: float
    geomean_speedup_correct: float
    mean_score: float
    pass_at_k: dict[int, float]
    tokens_in: int
    tokens_out: int
    cost_usd: float
    agent_wall_s: float
    eval_wall_s: float


def p_label(p: float) -> str:
    """A threshold as it appears in names and reports: ``1.0``, ``1.2``, ``2.0``."""
    return f"{p:g}" if p != int(p) else f"{p:.1f}"


def fast_p_column(p: float) -> str:
    """Column name of the fast_p indicator, e.g. ``fast_1.2``."""
    return f"fast_{p_label(p)}"


def per_task(finals: pl.DataFrame, floor: float) -> pl.DataFrame:
    """Reduce final attempts to one row per task: means, counts and repeat variance.

    Columns: task, n, n_correct, compiled, correct, fast_<p> for each p, score,
    log_speedup (mean effective log speedup), log_var (its sample variance over
    repeats; null for one repeat).
    """
    correct = pl.col("correct").fill_null(False)
    fast = [
        (correct & (pl.col("speedup").fill_null(0.0) > p)).cast(pl.Float64).alias(fast_p_column(p))
        for p in FAST_P_THRESHOLDS
    ]
    rows = finals.with_columns(effective_log_speedup(floor), *fast)
    return (
        rows.group_by("task")
        .agg(
            pl.len().alias("n"),
            correct.sum().alias("n_correct"),
            pl.col("compiled").fill_null(False).cast(pl.Float64).mean().alias("compiled"),
            correct.cast(pl.Float64).mean().alias("correct"),
            *[pl.col(fast_p_column(p)).mean() for p in FAST_P_THRESHOLDS],
            pl.col("score").mean().alias("score"),
            pl.col("log_speedup_eff").mean().alias("log_speedup"),
            pl.col("log_speedup_eff").var(ddof=1).alias("log_var"),
        )
        .sort("task")
    )


def _mean(frame: pl.DataFrame, column: str) -> float:
    value = frame.get_column(column).mean()
    return float(value) if isinstance(value, int | float) else math.nan


def _total(frame: pl.DataFrame, column: str) -> float:
    return float(frame.get_column(column).fill_null(0).sum())


def _names(frame: pl.DataFrame, column: str) -> tuple[str, ...]:
    return tuple(sorted(str(v) for v in frame.get_column(column).drop_nulls().unique()))


def _pass_at_k(tasks: pl.DataFrame, repeats_min: int) -> dict[int, float]:
    ks = sorted({1, repeats_min} | {2**i for i in range(1, 8) if 2**i <= repeats_min})
    pairs = list(zip(tasks.get_column("n"), tasks.get_column("n_correct"), strict=True))
    return {k: sum(pass_at_k(int(n), int(c), k) for n, c in pairs) / len(pairs) for k in ks}


def summarize(frame: pl.DataFrame, label: str, tasks: list[str], floor: float) -> ArmSummary:
    """Summarise one side's attempt rows over ``tasks`` (see :class:`ArmSummary`)."""
    rows = frame.filter(pl.col("task").is_in(tasks))
    finals = final_attempts(rows)
    firsts = final_attempts(rows, first_try=True)
    by_task = per_task(finals, floor)
    first_by_task = per_task(firsts, floor)
    counts = by_task.get_column("n")
    repeats_min, repeats_max = int(counts.min()), int(counts.max())  # type: ignore[arg-type]
    spent = rows.filter(pl.col("turn") == 0)  # every try, retries included: what was paid
    correct_logs = finals.filter(pl.col("correct").fill_null(False)).get_column("speedup")
    correct_logs = correct_logs.drop_nulls().log()
    return ArmSummary(
        label=label,
        runs=_names(finals, "run_id"),
        arms=_names(finals, "arm"),
        agents=_names(finals, "agent"),
        n_tasks=by_task.height,
        n_attempts=finals.height,
        repeats_min=repeats_min,
        repeats_max=repeats_max,
        compiled_rate=_mean(by_task, "compiled"),
        correct_rate=_mean(by_task, "correct"),
        correct_rate_first_try=_mean(first_by_task, "correct"),
        infra_retries=int(spent.get_column("infra_retry").fill_null(False).sum()),
        fast_p={p_label(p): _mean(by_task, fast_p_column(p)) for p in FAST_P_THRESHOLDS},
        geomean_speedup=math.exp(_mean(by_task, "log_speedup")),
        geomean_speedup_correct=(
            math.exp(float(correct_logs.mean())) if correct_logs.len() else math.nan  # type: ignore[arg-type]
        ),
        mean_score=_mean(by_task, "score"),
        pass_at_k=_pass_at_k(by_task, repeats_min),
        tokens_in=int(_total(spent, "tokens_in")),
        tokens_out=int(_total(spent, "tokens_out")),
        cost_usd=_total(spent, "cost_usd"),
        agent_wall_s=_total(spent, "agent_wall_s"),
        eval_wall_s=_total(spent, "eval_wall_s"),
    )
