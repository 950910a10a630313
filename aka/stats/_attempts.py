"""The attempt table: the one input every statistic and export is computed from.

The arena produces it from the DuckDB view ``scores``: one row per scored attempt (and
one per intermediate self-evaluation, ``turn > 0``). Everything in ``aka.stats`` is a
pure function of such a table, so the same code serves the CLI, notebooks and tests.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

import polars as pl
import pyarrow as pa

from aka.errors import InputError, NotFoundError

AttemptTable: TypeAlias = pl.DataFrame | pa.Table
"""What callers may pass: a polars DataFrame or a pyarrow Table with the columns below."""

ATTEMPT_COLUMNS: dict[str, pl.DataType | type[pl.DataType]] = {
    "run_id": pl.String,
    "arm": pl.String,
    "agent": pl.String,
    "task": pl.String,
    "repeat": pl.Int64,
    "attempt_key": pl.String,
    "try_no": pl.Int64,
    "compiled": pl.Boolean,
    "correct": pl.Boolean,
    "speedup": pl.Float64,
    "score": pl.Float64,
    "reward_components": pl.String,
    "policy": pl.String,
    "hack_flags": pl.List(pl.String),
    "candidate": pl.String,
    "diff": pl.String,
    "task_digest": pl.String,
    "harness_digest": pl.String,
    "device": pl.String,
    "config_digest": pl.String,
    "arm_digest": pl.String,
    "tokens_in": pl.Int64,
    "tokens_out": pl.Int64,
    "cost_usd": pl.Float64,
    "agent_wall_s": pl.Float64,
    "eval_wall_s": pl.Float64,
    "prompt": pl.String,
    "response": pl.String,
    "baseline_time_s": pl.Float64,
    "candidate_time_s": pl.Float64,
    "speedup_ci_low": pl.Float64,
    "speedup_ci_high": pl.Float64,
    "trials": pl.Int64,
    "turn": pl.Int64,
    "infra_retry": pl.Boolean,
}
"""Column name -> dtype of the attempt table (the ``scores`` view), in its documented order.

``reward_components`` may also arrive as a struct; it is normalised to a JSON string with
sorted keys so its schema never depends on which components a policy stored.
"""

COMPARE_COLUMNS: tuple[str, ...] = (
    "run_id",
    "arm",
    "agent",
    "task",
    "repeat",
    "try_no",
    "turn",
    "compiled",
    "correct",
    "speedup",
    "score",
    "policy",
    "task_digest",
    "harness_digest",
    "device",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "agent_wall_s",
    "eval_wall_s",
    "infra_retry",
)
"""The subset of columns :func:`aka.stats.compare` reads."""

ATTEMPT_IDENTITY: tuple[str, ...] = ("run_id", "arm", "agent", "task", "repeat")
"""One attempt slot; several ``try_no`` rows in a slot are infrastructure retries."""


def _components_json(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return json.dumps(dict(value), sort_keys=True, default=str)
    raise TypeError(f"reward_components must be a struct or a JSON string, got {type(value)}")


def attempt_frame(
    table: AttemptTable, *, need: Iterable[str] = tuple(ATTEMPT_COLUMNS), where: str = "attempts"
) -> pl.DataFrame:
    """Validate an attempt table and return it as a polars frame with the documented dtypes.

    Args:
        table: a polars DataFrame or a pyarrow Table.
        need: the columns the caller reads; missing ones raise, extra ones are kept.
        where: a name for the table in error messages (e.g. the run or arm label).

    Raises:
        InputError: the table is of another type, lacks a needed column, or a column
            cannot be cast to its documented dtype.
    """
    if isinstance(table, pa.Table):
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
    elif isinstance(table, pl.DataFrame):
        frame = table
    else:
        raise InputError(
            f"expected a polars DataFrame or a pyarrow Table, got {type(table).__name__}",
            where=where,
            fix="query the `scores` view (duckdb .pl() or .arrow()) and pass the result",
        )
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise InputError(
            f"attempt table lacks column(s) {', '.join(missing)}",
            where=where,
            fix="select every column of the `scores` view (see docs/statistics.md)",
        )
    casts = []
    for name in need:
        dtype = ATTEMPT_COLUMNS.get(name)
        if dtype is None or frame.schema[name] == dtype:
            continue
        if name == "reward_components":
            casts.append(
                pl.col(name).map_elements(_components_json, return_dtype=pl.String).alias(name)
            )
        else:
            casts.append(pl.col(name).cast(dtype))
    try:
        return frame.with_columns(casts) if casts else frame
    except (pl.exceptions.PolarsError, TypeError) as exc:
        raise InputError(
            f"attempt table has a column of the wrong type: {exc}",
            where=where,
            fix="cast the columns to the dtypes listed in docs/statistics.md",
        ) from exc


def final_attempts(frame: pl.DataFrame, *, first_try: bool = False) -> pl.DataFrame:
    """One row per attempt slot: the final candidate (``turn == 0``) of one try.

    Infrastructure retries re-run a slot whose first try failed for reasons outside the
    agent (a node died, a container did not start). By default the last try counts (the
    retried result replaces the lost one); ``first_try=True`` keeps the first try, which
    is the result a run without retries would have reported.
    """
    finals = frame.filter(pl.col("turn") == 0)
    order = pl.col("try_no")
    pick = finals.sort(order, descending=not first_try)
    return pick.unique(subset=list(ATTEMPT_IDENTITY), keep="first", maintain_order=True)


def effective_log_speedup(floor: float) -> pl.Expr:
    """log(speedup) for a correct attempt, never below log(floor); log(floor) otherwise.

    The floor is where failures land, and a correct kernel is never scored below a
    failure (a 0.1x kernel is as useless as a broken one, not ten times worse).
    """
    log_floor = math.log(floor)
    ok = pl.col("correct").fill_null(False) & pl.col("speedup").is_not_null()
    return (
        pl.when(ok)
        .then(pl.col("speedup").clip(lower_bound=floor).log())
        .otherwise(pl.lit(log_floor))
        .alias("log_speedup_eff")
    )


def select_attempts(table: AttemptTable, ref: str) -> pl.DataFrame:
    """The rows of one side of a comparison, named the way ``aka compare`` names it.

    ``ref`` is a run id (every arm of that run), ``RUN/ARM`` (one arm of one run), or an
    arm name that exactly one run has.

    Raises:
        NotFoundError: no run or arm is called ``ref`` (the message lists known runs).
        InputError: ``ref`` is an arm name that several runs share.
    """
    frame = attempt_frame(table, need=("run_id", "arm"), where=ref)
    pairs = sorted(set(frame.select("run_id", "arm").iter_rows()))
    runs = sorted({run for run, _ in pairs})
    if ref in runs:
        return frame.filter(pl.col("run_id") == ref)
    run, slash, arm = ref.rpartition("/")
    if slash and (run, arm) in pairs:
        return frame.filter((pl.col("run_id") == run) & (pl.col("arm") == arm))
    owners = sorted(r for r, a in pairs if a == ref)
    if len(owners) == 1:
        return frame.filter((pl.col("run_id") == owners[0]) & (pl.col("arm") == ref))
    if owners:
        raise InputError(
            f"arm {ref!r} exists in several runs ({', '.join(owners[:5])})",
            where=ref,
            fix=f"name one run's arm, e.g. {owners[0]}/{ref}",
        )
    known = ", ".join(f"{r}/{a}" for r, a in pairs[:5]) + (" ..." if len(pairs) > 5 else "")
    raise NotFoundError(
        f"no run or arm named {ref!r} (known: {known or 'none'})",
        where=ref,
        fix="pass a run id, RUN/ARM, or an arm name; `aka sql` lists them: "
        "select distinct run_id, arm from scores",
    )
