"""An output's dtype is the task's contract, read from its baseline run alone.

The checker compares values in float64, so an index kernel that writes int32 where the
task's baseline returns int64 had every value right, and wrote half the bytes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import REPO

ARGMAX = REPO / "tasks" / "triton2triton" / "llm" / "argmax"


def _check(cli: Callable[..., Any], kernel: Path, ledger_dir: Path) -> dict[str, Any]:
    res = cli("check", str(kernel), "--task", "triton2triton/llm/argmax", "--root",
              str(REPO / "tasks"), "--device", "cpu", "--ledger", str(ledger_dir),
              "--format", "json")  # fmt: skip
    assert res.code == 0, res.err
    return dict(json.loads(res.out))


def test_narrower_indices_than_the_baseline_s_are_not_correct(
    cli: Callable[..., Any], tmp_path: Path, ledger_dir: Path
) -> None:
    source = (ARGMAX / "source" / "kernel.py").read_text()
    int64 = "out = torch.empty(m, dtype=torch.int64"
    narrow = source.replace(int64, int64.replace("int64", "int32"))
    assert narrow != source
    (tmp_path / "kernel.py").write_text(narrow)
    verdict = _check(cli, tmp_path / "kernel.py", ledger_dir)
    assert not verdict["correct"]
    assert "output_dtype" in verdict["hack_flags"]
    assert "Int where the task's baseline returns Long" in json.dumps(verdict)
    # The baseline itself, as a candidate, keeps its contract.
    (tmp_path / "same.py").write_text(source)
    assert _check(cli, tmp_path / "same.py", ledger_dir)["correct"]
