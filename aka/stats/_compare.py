"""Paired A/B comparison of two sides of attempts, task by task.

The unit of evidence is the task: repeats are averaged within a task on each side, the
per-task deltas (B minus A) are the sample, and every interval and test resamples or
permutes tasks. See docs/statistics.md for each rule and why it was chosen.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from aka.errors import InputError
from aka.stats._attempts import COMPARE_COLUMNS, AttemptTable, attempt_frame, final_attempts
from aka.stats._checks import check_comparable
from aka.stats._estimators import (
    VarianceSplit,
    bootstrap_mean_ci,
    cohens_dz,
    min_detectable_effect,
    rank_biserial,
    sign_flip_pvalue,
    split_variance,
    wilcoxon_pvalue,
)
from aka.stats._summary import DEFAULT_FLOOR, ArmSummary, per_task, summarize

Verdict = Literal["better", "worse", "no detectable difference"]

DEFAULT_N_BOOT = 4000
DEFAULT_N_PERMUTATIONS = 9999
POWER = 0.8


@dataclass(frozen=True)
class TaskDelta:
    """One task's paired result: each side's repeat mean and the difference B - A."""

    task: str
    n_a: int
    n_b: int
    log_speedup_a: float
    log_speedup_b: float
    delta_log_speedup: float
    fast_1_a: float
    fast_1_b: float


@dataclass(frozen=True)
class Paired:
    """The paired statistics over common tasks (B minus A; positive favours B).

    Attributes:
        n_tasks: tasks paired.
        delta_log_speedup: mean over tasks of the per-task difference in mean effective
            log speedup; ``exp`` of it is the ratio of the two geometric means.
        delta_log_speedup_ci: expanded-percentile bootstrap CI over tasks.
        speedup_ratio: ``exp(delta_log_speedup)``.
        speedup_ratio_ci: the CI mapped through ``exp``.
        delta_fast_1: mean per-task difference in fast_1.0.
        delta_fast_1_ci: bootstrap CI of it.
        wilcoxon_p: Wilcoxon signed-rank p of the per-task log-speedup deltas.
        permutation_p: paired (sign-flip) permutation p of the same deltas.
        cohens_dz: mean delta over its standard deviation.
        rank_biserial: matched-pairs rank-biserial correlation, in [-1, 1].
        tasks_better: tasks where B's mean exceeds A's.
        tasks_worse: tasks where it falls short.
        tasks_tied: tasks with equal means.
        variance: the per-task delta's variance split into task and repeat parts.
        mde_log_speedup: minimum detectable |delta log speedup| at ``alpha`` with power
            0.8 for this many tasks and repeats.
        mde_ratio: ``exp(mde_log_speedup)``, as a speedup ratio.
        repeats: mean repeats per task and side used for the MDE.
    """

    n_tasks: int
    delta_log_speedup: float
    delta_log_speedup_ci: tuple[float, float]
    speedup_ratio: float
    speedup_ratio_ci: tuple[float, float]
    delta_fast_1: float
    delta_fast_1_ci: tuple[float, float]
    wilcoxon_p: float
    permutation_p: float
    cohens_dz: float
    rank_biserial: float
    tasks_better: int
    tasks_worse: int
    tasks_tied: int
    variance: VarianceSplit
    mde_log_speedup: float
    mde_ratio: float
    repeats: float


@dataclass(frozen=True)
class Comparison:
    """Everything ``aka compare`` reports; build it with :func:`compare`.

    Attributes:
        labels: display names of side A and side B.
        a: summary of side A over the common tasks.
        b: summary of side B over the common tasks.
        paired: the paired statistics (B minus A).
        verdict: "better" / "worse" (B relative to A) or "no detectable difference".
        verdict_rule: the rule in words, so a report is self-explaining.
        alpha: significance level of tests and 1 - confidence of intervals.
        floor: the speedup failures count at.
        n_boot: bootstrap resamples.
        seed: seed of every random draw (results are reproducible).
        warnings: setup differences accepted with ``force``.
        tasks: per-task paired rows.
    """

    labels: tuple[str, str]
    a: ArmSummary
    b: ArmSummary
    paired: Paired
    verdict: Verdict
    verdict_rule: str
    alpha: float
    floor: float
    n_boot: int
    seed: int
    warnings: tuple[str, ...]
    tasks: tuple[TaskDelta, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN and infinities become None; tuples become lists)."""
        return _jsonable(dataclasses.asdict(self))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def verdict_rule(alpha: float) -> str:
    """The verdict rule in words (also in docs/statistics.md)."""
    return (
        f"'better' (or 'worse') when the {1 - alpha:.0%} bootstrap CI of the mean per-task "
        f"delta log speedup lies entirely above (below) 0 AND the paired permutation test "
        f"gives p < {alpha:g}; otherwise 'no detectable difference'"
    )


def decide(ci: tuple[float, float], permutation_p: float, alpha: float) -> Verdict:
    """Apply :func:`verdict_rule`: both the interval and the test must agree."""
    if permutation_p < alpha and ci[0] > 0:
        return "better"
    if permutation_p < alpha and ci[1] < 0:
        return "worse"
    return "no detectable difference"


def paired_stats(
    joined: pl.DataFrame, *, alpha: float, n_boot: int, n_permutations: int, seed: int
) -> Paired:
    """Paired statistics from a per-task join of both sides (see :class:`Paired`)."""
    la = joined.get_column("log_speedup").to_numpy()
    lb = joined.get_column("log_speedup_b").to_numpy()
    d = lb - la
    fd = (joined.get_column("fast_1.0_b") - joined.get_column("fast_1.0")).to_numpy()
    rng = np.random.default_rng(seed)
    ci = bootstrap_mean_ci(d, alpha=alpha, n_boot=n_boot, rng=rng)
    fci = bootstrap_mean_ci(fd, alpha=alpha, n_boot=n_boot, rng=rng)
    n_a = joined.get_column("n").to_numpy().astype(np.float64)
    n_b = joined.get_column("n_b").to_numpy().astype(np.float64)
    within = np.concatenate(
        [joined.get_column(c).fill_null(np.nan).to_numpy() for c in ("log_var", "log_var_b")]
    )
    split = split_variance(d, within, 1.0 / n_a + 1.0 / n_b)
    repeats = float(2.0 / np.mean(1.0 / n_a + 1.0 / n_b))
    mde = min_detectable_effect(split, n_tasks=d.size, repeats=repeats, alpha=alpha, power=POWER)
    mean = float(d.mean())
    return Paired(
        n_tasks=int(d.size),
        delta_log_speedup=mean,
        delta_log_speedup_ci=ci,
        speedup_ratio=math.exp(mean),
        speedup_ratio_ci=(math.exp(ci[0]), math.exp(ci[1])),
        delta_fast_1=float(fd.mean()),
        delta_fast_1_ci=fci,
        wilcoxon_p=wilcoxon_pvalue(d),
        permutation_p=sign_flip_pvalue(d, n_resamples=n_permutations, seed=seed),
        cohens_dz=cohens_dz(d),
        rank_biserial=rank_biserial(d),
        tasks_better=int((d > 0).sum()),
        tasks_worse=int((d < 0).sum()),
        tasks_tied=int((d == 0).sum()),
        variance=split,
        mde_log_speedup=mde,
        mde_ratio=math.exp(mde) if math.isfinite(mde) else math.nan,
        repeats=repeats,
    )


def _task_rows(joined: pl.DataFrame) -> tuple[TaskDelta, ...]:
    return tuple(
        TaskDelta(
            task=r["task"],
            n_a=r["n"],
            n_b=r["n_b"],
            log_speedup_a=r["log_speedup"],
            log_speedup_b=r["log_speedup_b"],
            delta_log_speedup=r["log_speedup_b"] - r["log_speedup"],
            fast_1_a=r["fast_1.0"],
            fast_1_b=r["fast_1.0_b"],
        )
        for r in joined.iter_rows(named=True)
    )


def compare(
    a: AttemptTable,
    b: AttemptTable,
    *,
    labels: tuple[str, str] = ("A", "B"),
    force: bool = False,
    alpha: float = 0.05,
    floor: float = DEFAULT_FLOOR,
    n_boot: int = DEFAULT_N_BOOT,
    n_permutations: int = DEFAULT_N_PERMUTATIONS,
    seed: int = 0,
) -> Comparison:
    """Compare side B against side A, paired per task.

    Args:
        a: attempt rows of the baseline side (one or more runs/arms).
        b: attempt rows of the treatment side.
        labels: display names of the two sides.
        force: compare even when task sets, harness digests, scoring policy or device
            fingerprints differ; the differences become ``warnings``.
        alpha: test level; intervals are ``1 - alpha``.
        floor: speedup a failed attempt counts as (in (0, 1]).
        n_boot: bootstrap resamples.
        n_permutations: Monte Carlo sign flips (exact enumeration when 2**tasks is less).
        seed: seed for every random draw.

    Raises:
        InputError: a table lacks columns; A and B share a run/arm; they have no task in
            common; or (without ``force``) their setups differ; a bad parameter.
    """
    if not 0 < alpha < 0.5:
        raise InputError(f"alpha must be in (0, 0.5), got {alpha}", fix="use e.g. 0.05")
    if not 0 < floor <= 1:
        raise InputError(f"floor must be in (0, 1], got {floor}", fix="use e.g. 0.5")
    fa = attempt_frame(a, need=COMPARE_COLUMNS, where=labels[0])
    fb = attempt_frame(b, need=COMPARE_COLUMNS, where=labels[1])
    for frame, label in ((fa, labels[0]), (fb, labels[1])):
        if frame.filter(pl.col("turn") == 0).is_empty():
            raise InputError(
                "no scored final attempt (turn 0)",
                where=label,
                fix="check the run id or arm name; `aka sql` lists the runs in `scores`",
            )
    tasks, warnings = check_comparable(fa, fb, labels, force=force)
    fa, fb = (f.filter(pl.col("task").is_in(tasks)) for f in (fa, fb))
    ta, tb = (per_task(final_attempts(f), floor) for f in (fa, fb))
    joined = ta.join(tb, on="task", suffix="_b").sort("task")
    paired = paired_stats(
        joined, alpha=alpha, n_boot=n_boot, n_permutations=n_permutations, seed=seed
    )
    return Comparison(
        labels=labels,
        a=summarize(fa, labels[0], floor, ta),
        b=summarize(fb, labels[1], floor, tb),
        paired=paired,
        verdict=decide(paired.delta_log_speedup_ci, paired.permutation_p, alpha),
        verdict_rule=verdict_rule(alpha),
        alpha=alpha,
        floor=floor,
        n_boot=n_boot,
        seed=seed,
        warnings=warnings,
        tasks=_task_rows(joined),
    )
