"""``aka bench scale``: one real run per worker count, every attempt checked scored once."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from aka.config import RunnerSettings
from aka_runners._scale import (
    WorkerRow,
    _run_workers,
    default_counts,
    scale_step,
    step_plan,
    with_ratios,
)

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tests" / "fixtures" / "tasks"


def test_a_lost_or_double_scored_attempt_fails_the_exactly_once_check() -> None:
    rows = [WorkerRow("local-gpu0", 3, 2, 40.0, 50.0, 0.8)]
    # b's worker died and no one finished it; c was scored by two workers.
    step = scale_step(2, ["gpu0", "gpu1"], "r", {"a": 1, "b": 0, "c": 2}, 60.0, 50.0, rows)
    assert not step.exactly_once
    assert (step.unscored, step.scored_twice, step.scored_once) == (("b",), ("c",), 1)
    assert step.per_hour == 60.0  # only the attempt scored once counts
    assert scale_step(1, ["gpu0"], "r", {"a": 1}, 60.0, 0.0, rows).per_hour_span == 0.0


def test_ratio_to_linear_is_against_the_smallest_count_whatever_the_order() -> None:
    def step(n: int, per_hour_wall: float) -> Any:
        counts = {f"k{i}": 1 for i in range(int(per_hour_wall))}
        return scale_step(n, ["cpu"] * n, f"r{n}", counts, 3600.0, 3600.0, [])

    warm = replace(step(4, 50), warm_up=True)  # compiled everything: faster, not measured
    ran = with_ratios([warm, step(4, 36), step(1, 10), step(2, 19)])
    assert ran[0].ratio_to_linear is None
    four, one, two = ran[1:]
    ratios = (one.ratio_to_linear, two.ratio_to_linear, four.ratio_to_linear)
    assert ratios == pytest.approx((1.0, 0.95, 0.9))
    assert default_counts(1) == [1] and default_counts(6) == [1, 2, 4, 6]
    assert default_counts(8) == [1, 2, 4, 8]


def test_the_warm_up_comes_first_and_the_kill_goes_to_the_last_step_with_a_spare_worker() -> None:
    assert step_plan([1, 2, 4, 4], warm_up=True, kill_after_s=20.0) == [
        (4, True, None),
        (1, False, None),
        (2, False, None),
        (4, False, None),
        (4, False, 20.0),
    ]
    assert step_plan([2, 1], kill_after_s=5.0) == [(2, False, None), (1, False, None)]
    assert step_plan([1, 2]) == [(1, False, None), (2, False, None)]


def test_bench_scale_runs_two_cpu_workers_and_reads_back_the_ledger(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    cfg = {
        "label": "scale",
        "tasks": ["torch/ops/affine"],
        "tasks_root": str(TASKS),
        "arms": [{"name": "noop", "agent": "noop"}],
        "device": "cpu",
        "repeats": 2,
        "timing": {"max_time_s": 0.1, "min_samples": 5},
        "runner": {"kind": "local", "gpus": [0]},  # replaced by the bench's CPU workers
    }
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(cfg))
    ledger = tmp_path / "ledger"
    out = tmp_path / "scale.json"
    args = ["bench", "scale", str(config), "--cpu", "2", "--counts", "2", "--lease-ttl", "5"]
    res = cli(*args, "--ledger", str(ledger), "-f", "json", "--output", str(out))
    assert res.code == 0, res.err
    report = json.loads(res.out)
    assert report == json.loads(out.read_text())
    [step] = report["steps"]
    assert not step["warm_up"]
    assert step["workers"] == 2 and step["devices"] == ["cpu", "cpu"]
    assert step["exactly_once"] and step["attempts"] == step["scored_once"] == 2
    assert step["killed"] is None and step["died"] == []
    assert step["ratio_to_linear"] == 1.0 and step["per_hour"] > 0
    rows = step["worker_rows"]
    assert {r["worker"] for r in rows} <= {"local-cpu0", "local-cpu1"}
    assert sum(r["attempts_finished"] for r in rows) == 2
    assert all(0 < r["utilization"] <= 1 + 1e-9 for r in rows if r["attempts_finished"])
    status = cli("status", "--ledger", str(ledger), "-f", "json")
    [run] = json.loads(status.out)
    assert run["run_id"] == step["run_id"] and run["label"] == "scale-x2"
    assert run["status"] == "finished"
    too_many = cli(*args[:3], "--cpu", "2", "--counts", "1,3", "--ledger", str(ledger))
    assert too_many.code != 0 and "--counts" in too_many.err


@pytest.mark.usefixtures("standin_path")
def test_kill_after_kills_the_last_worker_and_its_attempts_are_still_scored_once(
    tmp_path: Path,
) -> None:
    import runners_standin as standin

    keys = {"slow": 2.0, **{f"t{i}": 0.05 for i in range(4)}}
    standin.setup(tmp_path, keys)
    settings = RunnerSettings(kind="local", workers=2, lease_ttl_s=1.0)
    killed, died = _run_workers("r", tmp_path, settings, 1.0, source="runners_standin:make")
    assert (killed, died) == ("local-cpu1", ())
    events = standin.read_events(tmp_path)
    assert Counter(e[1] for e in events if e[0] == "scored") == Counter(dict.fromkeys(keys, 1))
    assert all(e[2] == "local-cpu0" for e in events if e[0] == "scored" and e[1] == "slow")


@pytest.mark.usefixtures("standin_path")
def test_a_worker_refused_by_preflight_is_named_as_died(tmp_path: Path) -> None:
    from aka_runners import detect_device

    if detect_device().kind != "cpu":
        pytest.skip("a GPU is present: the pinned worker would not be refused")
    import runners_standin as standin

    standin.setup(tmp_path, {"a": 0.0})
    settings = RunnerSettings(kind="local", gpus=[0], lease_ttl_s=1.0)
    assert _run_workers("r", tmp_path, settings, None, source="runners_standin:make") == (
        None,
        ("local-gpu0",),
    )
