"""Adding a scoring policy, done once as docs/architecture.md says.

A policy is one function and one ``register_policy`` line. The run config's
``scoring.policy`` is checked against the registry (not a list of names kept in the
config module), so once registered the policy scores a run, its scores are what the
views and ``aka report`` show, and ``aka export rewards --policy`` reshapes with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from arena_helpers import write_config

from aka.scoring import Components, RewardPolicy, register_policy, unregister_policy


@pytest.fixture
def pass_fail() -> Iterator[str]:
    """The one registration a new policy needs (and its removal after the test)."""

    @register_policy("pass_fail")
    def _pass_fail(c: Components, p: RewardPolicy) -> float:
        return 1.0 if c.correct else 0.0

    yield "pass_fail"
    unregister_policy("pass_fail")


def _scores(cli: Callable[..., Any], ledger: Path) -> list[tuple[str, float, str]]:
    res = cli("sql", "SELECT policy, score, policy_spec FROM all_scores WHERE purpose = 'final'", "--ledger", str(ledger),
              "--format", "json")  # fmt: skip
    assert res.code == 0, res.err
    return [(r["policy"], r["score"], r["policy_spec"]) for r in json.loads(res.out)]


def test_an_unregistered_policy_is_refused_naming_the_field_and_the_registry(
    cli, tmp_path, tasks_root, ledger_dir
) -> None:
    cfg = write_config(tmp_path, tasks_root, scoring={"policy": "pass_fail"})
    res = cli("run", str(cfg), "--ledger", str(ledger_dir))
    assert res.code == 2
    assert "scoring.policy" in res.err and "unknown policy 'pass_fail'" in res.err
    assert "registered: agentkernelarena, fast_p, log_speedup" in res.err


@pytest.mark.usefixtures("pass_fail")
def test_a_registered_policy_scores_the_run_and_reshapes_the_export(
    cli, tmp_path, tasks_root, ledger_dir
) -> None:
    cfg = write_config(tmp_path, tasks_root, scoring={"policy": "pass_fail"})
    assert cli("run", str(cfg), "--ledger", str(ledger_dir)).code == 0
    ((policy, score, spec),) = _scores(cli, ledger_dir)
    assert (policy, score) == ("pass_fail", 1.0), "noop's unchanged sources are correct"
    assert json.loads(spec)["name"] == "pass_fail"
    report = cli("report", "--ledger", str(ledger_dir), "--format", "json")
    (row,) = json.loads(report.out)
    assert row["score"] == 1.0 and row["correct"] is True

    out: dict[str, list[float]] = {}
    for name in ("pass_fail", "agentkernelarena"):
        dest = tmp_path / f"{name}.parquet"
        res = cli("export", "rewards", "t", "--out", str(dest), "--format", "raw",
                  "--policy", name, "--ledger", str(ledger_dir))  # fmt: skip
        assert res.code == 0, res.err
        out[name] = pl.read_parquet(dest).get_column("reward").to_list()
    assert out["pass_fail"] == [1.0]
    assert out["agentkernelarena"] == [pytest.approx(120 + 100 * row["speedup"])]
