"""``aka bench eval`` runs both modes through the real evaluator and reports them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def test_bench_eval_reports_both_modes_with_the_same_verdicts(cli: Callable[..., Any]) -> None:
    res = cli("bench", "eval", "--device", "cpu", "--tasks", "1", "--format", "json")
    assert res.code == 0, res.err
    report = json.loads(res.out)
    naive, warm = report["naive"], report["warm"]
    assert naive["candidates"] == warm["candidates"] == 1
    assert [(r["task"], r["correct"]) for r in naive["runs"]] == [
        (r["task"], r["correct"]) for r in warm["runs"]
    ]
    for run in naive["runs"] + warm["runs"]:
        assert 0 <= run["kernel_s"] < run["wall_s"]
        assert abs(run["overhead_s"] - (run["wall_s"] - run["kernel_s"])) < 1e-9
        stages = run["stage_s"]
        assert {"compile", "correctness", "timing", "checker"} <= set(stages)
        assert all(v >= 0 for v in stages.values())
        assert sum(stages.values()) <= run["wall_s"] + 1e-6
    assert set(warm["stage_median_s"]) >= {"start", "load", "compile", "timing", "checker"}
    assert report["zygote_cuda_initialized"] is False
    # Every timed shape is an A/A check, judged against the engine's bar for its length.
    aa = warm["aa"]
    assert aa["shapes"] == len(warm["runs"][0]["shapes"]) > 0
    for row in aa["rows"]:
        assert row["worst"] >= 1.0 and row["median_us"] > 0
        assert (
            row["within"] is None
            if row["bar"] is None
            else row["within"] == (row["worst"] <= row["bar"])
        )


def test_bench_eval_rejects_an_unknown_format(cli: Callable[..., Any]) -> None:
    res = cli("bench", "eval", "--format", "csv")
    assert res.code == 2
