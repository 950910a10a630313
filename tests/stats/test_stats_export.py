"""Reward export: the file loads in pyarrow, polars and datasets, and trainers' reward
functions reproduce the ``reward`` column from the row alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from stats_synth import Arm, Model, attempts, draw_tasks, frame_from

from aka.errors import InputError
from aka.stats import HEAD_COLUMNS, export_rewards, reward_frame
from aka.stats.rewards import shape_reward

POLICIES = ["agentkernelarena", "log_speedup:floor=0.25,cap=4", "fast_p:thresholds=1.0/1.5/2.0"]


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    """Two arms, 4 tasks, 2 repeats, two self-evaluations before each final candidate."""
    rng = np.random.default_rng(0)
    tasks = draw_tasks(rng, 4, Model())
    a = attempts(rng, tasks, Arm(arm="base"), repeats=2, intermediate_turns=2)
    b = attempts(rng, tasks, Arm(arm="treat"), repeats=2, intermediate_turns=2)
    return pl.concat([a, b])


def verl_compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: dict[str, Any]
) -> float:
    """What a verl user writes as ``custom_reward_function``: components in, reward out."""
    assert data_source == "aka" and isinstance(solution_str, str)
    return shape_reward(json.loads(ground_truth), extra_info["reward_policy"])


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fmt", ["verl", "skyrl"])
def test_verl_style_compute_score_reproduces_the_reward(
    table: pl.DataFrame, tmp_path: Path, fmt: str, policy: str
) -> None:
    path = export_rewards(table, tmp_path / "r.parquet", format=fmt, policy=policy)  # type: ignore[arg-type]
    spec = "reward_model" if fmt == "verl" else "reward_spec"
    rows = pq.read_table(path).to_pylist()
    assert len(rows) == table.height
    for row in rows:
        got = verl_compute_score(
            row["data_source"], row["response"], row[spec]["ground_truth"], row["extra_info"]
        )
        assert got == pytest.approx(row["reward"])


def test_trl_style_reward_function_receives_every_column(
    table: pl.DataFrame, tmp_path: Path
) -> None:
    path = export_rewards(table, tmp_path / "r.parquet", format="trl", policy="log_speedup")
    rows = pq.read_table(path).to_pylist()
    # GRPOTrainer passes every column except prompt/completion as a list-valued kwarg
    kwargs = {k: [r[k] for r in rows] for k in rows[0] if k not in ("prompt", "completion")}
    seen: dict[str, Any] = {}

    def reward_func(prompts: list[Any], completions: list[Any], **kw: Any) -> list[float]:
        seen.update(kw)
        assert all(c[0]["role"] == "assistant" for c in completions)
        assert all(p[0]["role"] == "user" for p in prompts)
        fields = ("compiled", "correct", "speedup", "hack_flags")
        return [
            shape_reward({f: kw[f][i] for f in fields}, kw["reward_policy"][i])
            for i in range(len(prompts))
        ]

    got = reward_func([r["prompt"] for r in rows], [r["completion"] for r in rows], **kwargs)
    assert got == pytest.approx([r["reward"] for r in rows])
    assert {"trajectory_id", "group_id", "turn", "score", "task_digest"} <= set(seen)


@pytest.mark.parametrize("fmt", ["verl", "skyrl", "trl", "raw"])
def test_the_file_loads_in_pyarrow_and_polars_with_the_trainer_columns_first(
    table: pl.DataFrame, tmp_path: Path, fmt: str
) -> None:
    path = export_rewards(table, tmp_path / f"{fmt}.parquet", format=fmt)  # type: ignore[arg-type]
    arrow = pq.read_table(path)
    frame = pl.read_parquet(path)
    head = list(HEAD_COLUMNS[fmt])
    assert arrow.column_names[: len(head)] == head == frame.columns[: len(head)]
    assert frame.height == table.height
    if fmt != "raw":
        assert frame.get_column("prompt")[0].to_list()[0]["role"] == "user"
    assert [p.name for p in tmp_path.iterdir()] == [f"{fmt}.parquet"]  # no temp file left


def test_the_file_loads_in_hugging_face_datasets(table: pl.DataFrame, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    path = export_rewards(table, tmp_path / "r.parquet", format="verl")
    ds = datasets.Dataset.from_parquet(str(path), cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == table.height
    assert ds.column_names[:5] == list(HEAD_COLUMNS["verl"])
    assert ds[0]["prompt"][0]["role"] == "user"
    assert ds[0]["reward_model"]["style"] == "rule"


def test_turn_rows_form_trajectories_with_discounted_returns(table: pl.DataFrame) -> None:
    gamma = 0.5
    out = reward_frame(table, format="raw", policy="log_speedup", gamma=gamma)
    for _, traj in out.group_by("trajectory_id"):
        traj = traj.sort("step")
        assert traj.get_column("step").to_list() == [0, 1, 2]
        assert traj.get_column("turn").to_list() == [1, 2, 0]  # the final candidate is last
        assert traj.get_column("is_final").to_list() == [False, False, True]
        r, ret = traj.get_column("reward").to_list(), traj.get_column("discounted_return").to_list()
        assert ret[2] == pytest.approx(r[2])
        assert ret[0] == pytest.approx(r[0] + gamma * r[1] + gamma**2 * r[2])


def test_groups_are_tasks_and_trajectories_are_attempts(table: pl.DataFrame) -> None:
    out = reward_frame(table)
    per_group = out.group_by("group_id").agg(
        pl.col("task").n_unique(), pl.col("trajectory_id").n_unique()
    )
    assert per_group.get_column("task").to_list() == [1] * 4
    assert per_group.get_column("trajectory_id").to_list() == [4] * 4  # 2 arms x 2 repeats


def test_reward_is_shaped_while_score_stays_raw() -> None:
    rows = [
        {"task": "t1", "repeat": 0, "correct": True, "speedup": 2.0},
        {"task": "t1", "repeat": 1, "correct": True, "speedup": 3.0, "hack_flags": ["replay"]},
        {"task": "t1", "repeat": 2, "correct": False, "compiled": True},
    ]
    out = reward_frame(frame_from(rows), format="raw", policy="log_speedup")
    assert out.get_column("score").to_list() == [320.0, 420.0, 20.0]
    assert out.get_column("reward").to_list() == pytest.approx(
        [np.log(2.0), np.log(0.5), np.log(0.5)]
    )
    assert out.get_column("log_speedup").to_list()[:2] == pytest.approx([np.log(2.0), np.log(3.0)])
    assert out.get_column("hack_flags").to_list()[1] == ["replay"]


def test_tries_superseded_by_an_infra_retry_are_dropped_unless_asked() -> None:
    rows = [
        {"task": "t1", "repeat": 0, "correct": False, "try_no": 1},
        {
            "task": "t1",
            "repeat": 0,
            "correct": True,
            "speedup": 1.5,
            "try_no": 2,
            "infra_retry": True,
        },
    ]
    assert reward_frame(frame_from(rows)).get_column("try_no").to_list() == [2]
    assert reward_frame(frame_from(rows), last_try_only=False).height == 2


def test_bad_export_input_is_an_input_error(table: pl.DataFrame, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown export format"):
        reward_frame(table, format="openrlhf")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="unknown policy"):
        reward_frame(table, policy="speedup_squared")
    with pytest.raises(InputError, match="no attempt rows"):
        reward_frame(table.clear())
    with pytest.raises(InputError, match="lacks column"):
        reward_frame(table.drop("prompt"))
    with pytest.raises(InputError, match="gamma"):
        reward_frame(table, gamma=1.5)
