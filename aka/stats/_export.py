"""Reward tables an RL trainer loads as they are (verl, SkyRL, TRL, or raw).

:func:`reward_frame` is pure: attempt table in, reward table out. :func:`export_rewards`
writes it as one Parquet file, atomically. The column layout, per format, is documented
column by column in docs/rewards.md.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl

from aka.errors import InputError
from aka.stats._attempts import ATTEMPT_COLUMNS, ATTEMPT_IDENTITY, AttemptTable, attempt_frame
from aka.stats.rewards import Components, RewardPolicy, parse_policy, shape_reward

ExportFormat = Literal["verl", "skyrl", "trl", "raw"]
EXPORT_FORMATS: tuple[str, ...] = ("verl", "skyrl", "trl", "raw")

DATA_SOURCE = "aka"
"""``data_source`` of every row: one name, so one trainer reward function serves all."""
ABILITY = "gpu_kernel"
"""verl's ``ability`` tag."""
ENV_CLASS = "aka"
"""SkyRL's ``env_class``: the environment a SkyRL user registers for these rows."""

COMPONENT_COLUMNS: tuple[str, ...] = (
    "compiled",
    "correct",
    "speedup",
    "log_speedup",
    "baseline_time_s",
    "candidate_time_s",
    "speedup_ci_low",
    "speedup_ci_high",
    "trials",
)
PROVENANCE_COLUMNS: tuple[str, ...] = (
    "run_id",
    "arm",
    "agent",
    "task",
    "repeat",
    "attempt_key",
    "try_no",
    "infra_retry",
    "candidate",
    "diff",
    "task_digest",
    "harness_digest",
    "device",
    "config_digest",
    "arm_digest",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "agent_wall_s",
    "eval_wall_s",
)
COMMON_COLUMNS: tuple[str, ...] = (
    "trajectory_id",
    "group_id",
    "turn",
    "step",
    "is_final",
    "response",
    "message",
    "feedback",
    "reward",
    "score",
    "discounted_return",
    "reward_policy",
    "policy",
    *COMPONENT_COLUMNS,
    "reward_components",
    "hack_flags",
    *PROVENANCE_COLUMNS,
)
"""Columns every format carries after its trainer-specific head, in this order."""

OPTIONAL_TEXT_COLUMNS: tuple[str, ...] = ("message", "feedback")
"""Per-turn texts an attempt table may carry (``aka.tables`` does); empty when absent."""

HEAD_COLUMNS: dict[str, tuple[str, ...]] = {
    "verl": ("data_source", "prompt", "ability", "reward_model", "extra_info"),
    "skyrl": ("data_source", "prompt", "env_class", "reward_spec", "extra_info"),
    "trl": ("prompt", "completion", "data_source", "extra_info"),
    "raw": ("data_source", "prompt"),
}
"""The trainer-specific leading columns of each format."""


def _keep_last_try(frame: pl.DataFrame) -> pl.DataFrame:
    last = pl.col("try_no").max().over(list(ATTEMPT_IDENTITY))
    return frame.filter(pl.col("try_no") == last)


def _ids(frame: pl.DataFrame) -> pl.DataFrame:
    order = pl.when(pl.col("turn") == 0).then(pl.lit(2**31)).otherwise(pl.col("turn"))
    traj = pl.concat_str(pl.col("attempt_key"), pl.lit("#"), pl.col("try_no").cast(pl.String))
    return (
        frame.with_columns(traj.alias("trajectory_id"), pl.col("task_digest").alias("group_id"))
        .with_columns(
            (order.rank("ordinal").over("trajectory_id") - 1).cast(pl.Int64).alias("step"),
            (pl.col("turn") == 0).alias("is_final"),
        )
        .sort("trajectory_id", "step")
    )


def _rewards(frame: pl.DataFrame, policy: RewardPolicy, gamma: float) -> pl.DataFrame:
    comps = [Components.from_mapping(r) for r in frame.iter_rows(named=True)]
    reward = np.array([shape_reward(c, policy) for c in comps], dtype=np.float64)
    traj = frame.get_column("trajectory_id").to_list()
    ret = np.zeros_like(reward)
    running = 0.0
    for i in range(len(reward) - 1, -1, -1):  # rows are sorted by trajectory, then step
        same = i + 1 < len(reward) and traj[i + 1] == traj[i]
        running = reward[i] + (gamma * running if same else 0.0)
        ret[i] = running
    return frame.with_columns(
        pl.Series("reward", reward),
        pl.Series("discounted_return", ret),
        pl.Series("ground_truth", [c.to_json() for c in comps], dtype=pl.String),
        pl.Series("log_speedup", [c.log_speedup for c in comps], dtype=pl.Float64),
        pl.lit(policy.to_json()).alias("reward_policy"),
    )


def _head(fmt: ExportFormat, data_source: str) -> list[pl.Expr]:
    user = pl.struct(pl.lit("user").alias("role"), pl.col("prompt").alias("content"))
    chat = pl.concat_list([user]).alias("prompt")
    extra = pl.struct(
        pl.lit("train").alias("split"),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("index"),
        *(pl.col(c) for c in ("task", "run_id", "arm", "attempt_key", "trajectory_id")),
        *(pl.col(c) for c in ("group_id", "turn", "step", "reward_policy")),
    ).alias("extra_info")
    src = pl.lit(data_source).alias("data_source")
    truth = pl.col("ground_truth")
    if fmt == "verl":
        spec = pl.struct(pl.lit("rule").alias("style"), truth.alias("ground_truth"))
        return [src, chat, pl.lit(ABILITY).alias("ability"), spec.alias("reward_model"), extra]
    if fmt == "skyrl":
        spec = pl.struct(pl.lit("rule").alias("method"), truth.alias("ground_truth"))
        return [src, chat, pl.lit(ENV_CLASS).alias("env_class"), spec.alias("reward_spec"), extra]
    if fmt == "trl":
        said = pl.struct(pl.lit("assistant").alias("role"), pl.col("response").alias("content"))
        return [chat, pl.concat_list([said]).alias("completion"), src, extra]
    return [src, pl.col("prompt")]


def reward_frame(
    table: AttemptTable,
    *,
    format: ExportFormat = "verl",
    policy: RewardPolicy | str = "agentkernelarena",
    gamma: float = 0.4,
    last_try_only: bool = True,
    data_source: str = DATA_SOURCE,
) -> pl.DataFrame:
    """Build the reward table for ``format`` from an attempt table (pure).

    Args:
        table: attempt rows, final candidates (turn 0) and intermediate evaluations.
        format: which trainer's leading columns to emit (see :data:`HEAD_COLUMNS`).
        policy: the reward policy that fills ``reward`` (``score`` keeps the stored one).
        gamma: discount of ``discounted_return`` over a trajectory's later turns.
        last_try_only: drop tries an infrastructure retry superseded (their outcome
            says nothing about the agent).
        data_source: value of ``data_source``.

    Raises:
        InputError: unknown format, bad policy or gamma, missing columns, no rows.
    """
    if format not in EXPORT_FORMATS:
        raise InputError(
            f"unknown export format {format!r}", fix=f"use one of {', '.join(EXPORT_FORMATS)}"
        )
    if not 0.0 <= gamma <= 1.0:
        raise InputError(f"gamma must be in [0, 1], got {gamma}", fix="use e.g. 0.4")
    pol = parse_policy(policy)
    frame = attempt_frame(table, need=tuple(ATTEMPT_COLUMNS), where="export")
    if frame.is_empty():
        raise InputError(
            "no attempt rows to export", fix="check the run ids; `aka sql` lists the runs"
        )
    frame = frame.with_columns(
        pl.lit("").alias(c) for c in OPTIONAL_TEXT_COLUMNS if c not in frame.columns
    )
    if last_try_only:
        frame = _keep_last_try(frame)
    shaped = _rewards(_ids(frame), pol, gamma)
    return shaped.select(*_head(format, data_source), *COMMON_COLUMNS)


def _umask() -> int:
    """The process's umask (reading it means setting it; it is put straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def export_rewards(
    table: AttemptTable,
    out: Path,
    *,
    format: ExportFormat = "verl",
    policy: RewardPolicy | str = "agentkernelarena",
    gamma: float = 0.4,
    last_try_only: bool = True,
) -> Path:
    """Write :func:`reward_frame` to ``out`` as Parquet (temp file, fsync, rename).

    Returns:
        The path written (``out``).
    """
    frame = reward_frame(
        table, format=format, policy=policy, gamma=gamma, last_try_only=last_try_only
    )
    return write_parquet_atomic(frame, out)


def write_parquet_atomic(frame: pl.DataFrame, out: Path) -> Path:
    """Write ``frame`` to ``out`` as Parquet: a temporary file, fsync, rename.

    A reader never sees a half-written file, and the file gets the mode a plain ``open``
    would give it under the caller's umask.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        # mkstemp makes the file 0600; give it the mode a plain open() would under the
        # caller's umask, so a shared export directory stays readable as its owner set it.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            frame.write_parquet(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out
