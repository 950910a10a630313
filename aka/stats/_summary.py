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


def _means(frame: pl.DataFrame) -> dict[str, float]:
    row = frame.select(pl.exclude("task").cast(pl.Float64).mean()).row(0, named=True)
    return {k: math.nan if v is None else float(v) for k, v in row.items()}


SPEND_COLUMNS = ("tokens_in", "tokens_out", "cost_usd", "agent_wall_s", "eval_wall_s")


def _totals(frame: pl.DataFrame) -> dict[str, float]:
    cols = [pl.col(c).cast(pl.Float64).fill_null(0.0).sum() for c in SPEND_COLUMNS]
    cols.append(pl.col("infra_retry").fill_null(False).cast(pl.Float64).sum())
    return {k: float(v) for k, v in frame.select(cols).row(0, named=True).items()}


def _names(frame: pl.DataFrame) -> dict[str, tuple[str, ...]]:
    cols = ("run_id", "arm", "agent")
    values = frame.select(pl.col(c).drop_nulls().unique().implode() for c in cols).row(0)
    return {c: tuple(sorted(str(v) for v in vs)) for c, vs in zip(cols, values, strict=True)}


def _pass_at_k(tasks: pl.DataFrame, repeats_min: int) -> dict[int, float]:
    ks = sorted({1, repeats_min} | {2**i for i in range(1, 8) if 2**i <= repeats_min})
    pairs = list(zip(tasks.get_column("n"), tasks.get_column("n_correct"), strict=True))
    return {k: sum(pass_at_k(int(n), int(c), k) for n, c in pairs) / len(pairs) for k in ks}


def summarize(
    rows: pl.DataFrame, label: str, floor: float, by_task: pl.DataFrame | None = None
) -> ArmSummary:
    """Summarise one side's attempt rows (already restricted to the compared tasks).

    Args:
        rows: the side's attempt rows, every try and turn.
        label: display name of the side.
        floor: speedup failures count at.
        by_task: :func:`per_task` of the side's final attempts, if the caller has it.
    """
    finals = final_attempts(rows)
    by_task = per_task(finals, floor) if by_task is None else by_task
    spent = rows.filter(pl.col("turn") == 0)  # every try, retries included: what was paid
    retried = spent.height > finals.height
    first_by_task = per_task(final_attempts(rows, first_try=True), floor) if retried else by_task
    counts = by_task.get_column("n")
    repeats_min, repeats_max = int(counts.min()), int(counts.max())  # type: ignore[arg-type]
    correct = finals.filter(pl.col("correct").fill_null(False) & pl.col("speedup").is_not_null())
    log_correct = correct.select(pl.col("speedup").log().mean()).item()
    means, first, spend, names = (
        _means(by_task),
        _means(first_by_task),
        _totals(spent),
        _names(finals),
    )
    return ArmSummary(
        label=label,
        runs=names["run_id"],
        arms=names["arm"],
        agents=names["agent"],
        n_tasks=by_task.height,
        n_attempts=finals.height,
        repeats_min=repeats_min,
        repeats_max=repeats_max,
        compiled_rate=means["compiled"],
        correct_rate=means["correct"],
        correct_rate_first_try=first["correct"],
        infra_retries=int(spend["infra_retry"]),
        fast_p={p_label(p): means[fast_p_column(p)] for p in FAST_P_THRESHOLDS},
        geomean_speedup=math.exp(means["log_speedup"]),
        geomean_speedup_correct=math.nan if log_correct is None else math.exp(log_correct),
        mean_score=means["score"],
        pass_at_k=_pass_at_k(by_task, repeats_min),
        tokens_in=int(spend["tokens_in"]),
        tokens_out=int(spend["tokens_out"]),
        cost_usd=spend["cost_usd"],
        agent_wall_s=spend["agent_wall_s"],
        eval_wall_s=spend["eval_wall_s"],
    )
