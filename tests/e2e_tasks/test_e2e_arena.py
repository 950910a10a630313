"""The end-to-end tasks through `aka run` on CPU: the evaluator scores the model, not the kernel.

For each task, a replay of the known-faster kernel is correct and timed through the
task's entry (the whole forward or decode step); a replay of the starting Triton kernel
broken on purpose compiles, launches, and fails every correctness case on the model's
logits, which also shows that the candidate's own kernel is what runs inside the model.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from arena_helpers import write_config
from e2e_helpers import CANDIDATES, E2E, TASK_NAMES, wrong_kernel

TIMING = {"max_time_s": 0.05, "min_samples": 3}
# Tokens per second from the stored times (docs/serving.md quotes this query).
TOKENS_PER_S = (
    "SELECT shape, dtype, baseline_s, candidate_s, "
    "CAST(json_extract(shape, '$.B') AS BIGINT) "
    "* coalesce(CAST(json_extract(shape, '$.S') AS BIGINT), 1) AS tokens_per_call, "
    "tokens_per_call / baseline_s AS baseline_tokens_per_s, "
    "tokens_per_call / candidate_s AS candidate_tokens_per_s, "
    "speedup, speedup_ci_low, speedup_ci_high "
    "FROM measurements"
)


def _tasks_root(tmp: Path) -> Path:
    root = tmp / "tasks"
    shutil.copytree(E2E, root / "e2e" / "llama", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _rows(cli: Callable[..., object], ledger: Path) -> dict[tuple[str, str], dict[str, object]]:
    res = cli("report", "--ledger", str(ledger), "--format", "json")
    assert res.code == 0, res.err  # type: ignore[attr-defined]
    return {(r["task"], r["arm"]): r for r in json.loads(res.out)}  # type: ignore[attr-defined]


def _replay(name: str, source: Path) -> dict[str, object]:
    return {"name": name, "agent": "replay", "options": {"source": str(source)}}


def _broken(tmp: Path, name: str) -> Path:
    folder = tmp / f"wrong_{name}"
    folder.mkdir()
    (folder / "kernel.py").write_text(wrong_kernel(name))
    return folder


@pytest.mark.parametrize("name", TASK_NAMES)
def test_the_model_is_scored_with_the_candidate_kernel(cli, tmp_path, ledger_dir, name) -> None:
    task = f"e2e/llama/{name}"
    cfg = write_config(
        tmp_path,
        _tasks_root(tmp_path),
        tasks=[task],
        arms=[_replay("faster", CANDIDATES / name), _replay("wrong", _broken(tmp_path, name))],
        timing=TIMING,
    )
    res = cli("run", str(cfg), "--ledger", str(ledger_dir))
    assert res.code == 0, res.err
    rows = _rows(cli, ledger_dir)
    faster, wrong = rows[(task, "faster")], rows[(task, "wrong")]
    assert faster["compiled"] is True and faster["correct"] is True, faster["error"]
    assert float(faster["speedup"]) > 0  # type: ignore[arg-type]
    assert wrong["compiled"] is True and wrong["correct"] is False and wrong["score"] == 20.0, (wrong["error"], wrong.get("hack_flags"))
    cases = _cases(cli, ledger_dir, str(wrong["attempt_key"]))
    assert cases and all(not c["ok"] and "beyond atol" in c["error"] for c in cases)
    _check_tokens_per_s(cli, ledger_dir)


def _cases(cli: Callable[..., object], ledger: Path, attempt_key: str) -> list[dict[str, Any]]:
    """The per-case correctness results of one attempt (whatever else was flagged)."""
    query = (
        "SELECT CAST(payload->'$.cases' AS VARCHAR) AS cases FROM events "
        f"WHERE type = 'CorrectnessChecked' AND attempt_key = '{attempt_key}'"
    )
    res = cli("sql", query, "--ledger", str(ledger), "--format", "json")
    assert res.code == 0, res.err  # type: ignore[attr-defined]
    return [c for row in json.loads(res.out) for c in json.loads(row["cases"])]  # type: ignore[attr-defined]


def _check_tokens_per_s(cli: Callable[..., object], ledger: Path) -> None:
    res = cli("sql", TOKENS_PER_S, "--ledger", str(ledger), "--format", "json")
    assert res.code == 0, res.err  # type: ignore[attr-defined]
    rows = json.loads(res.out)  # type: ignore[attr-defined]
    assert rows
    for row in rows:
        shape = json.loads(row["shape"])
        tokens = shape["B"] * shape.get("S", 1)
        assert row["tokens_per_call"] == tokens
        assert row["baseline_tokens_per_s"] == pytest.approx(tokens / row["baseline_s"])
        assert row["candidate_tokens_per_s"] == pytest.approx(tokens / row["candidate_s"])
