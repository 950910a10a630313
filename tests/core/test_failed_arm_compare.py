"""An arm whose candidates all fail: it compares, its intervals say what they are, its
scores are the rewards the export gives under the same policy name."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import polars as pl
import pytest
from arena_helpers import harness_copy, write_config  # noqa: F401

from aka.dashboard import compare_page
from aka.events import REGISTRY
from aka_ledger import Ledger

BROKEN = {
    "name": "broken",
    "agent": "command",
    "options": {"command": ["sh", "-c", "echo 'raise RuntimeError(\"no kernel\")' > kernel.py"]},
}


def test_an_arm_of_failures_compares_with_undefined_intervals_named(
    cli,
    tmp_path: Path,
    tasks_root: Path,
    ledger_dir: Path,
    harness_copy: Path,  # noqa: F811 (the fixture imported above)
) -> None:
    cfg = write_config(
        tmp_path,
        tasks_root,
        arms=[{"name": "a", "agent": "noop"}, BROKEN],
        repeats=2,
        scoring={"policy": "log_speedup"},
    )
    assert cli("run", str(cfg), "--ledger", str(ledger_dir), "--run-id", "r1").code == 0
    out_file = tmp_path / "rewards.parquet"
    exported = cli("export", "rewards", "r1", "--out", str(out_file), "--format", "raw",
                   "--policy", "log_speedup", "--ledger", str(ledger_dir))  # fmt: skip
    assert exported.code == 0, exported.err
    rows = pl.read_parquet(out_file).filter(pl.col("is_final"))
    assert rows.height == 4
    for row in rows.iter_rows(named=True):  # the report's score is the exported reward
        assert row["reward"] == pytest.approx(row["score"])
        if not row["correct"]:
            assert row["score"] == pytest.approx(math.log(0.5))

    res = cli("compare", "r1/a", "r1/broken", "--ledger", str(ledger_dir))
    assert res.code == 0, res.err
    assert "device" not in res.err
    ci_cells = re.findall(r"95% CI ([^│\n]*)", res.out)
    assert len(ci_cells) == 3, res.out
    assert all(c.startswith("undefined (1 task, needs 2+)") for c in ci_cells), ci_cells
    out = json.loads(
        cli("compare", "r1/a", "r1/broken", "--ledger", str(ledger_dir), "--format", "json").out
    )
    assert out["warnings"] == []
    assert out["b"]["correct_rate"] == 0.0

    # A second run under an edited harness: the CLI refuses without --force, the page
    # (which has no --force) compares and shows the difference as a warning.
    kernel_py = next(harness_copy.rglob("*.py"))
    kernel_py.write_text(kernel_py.read_text() + "\n# edited\n")
    assert cli("run", str(cfg), "--ledger", str(ledger_dir), "--run-id", "r2").code == 0
    refused = cli("compare", "r1/a", "r2/a", "--ledger", str(ledger_dir))
    assert refused.code == 2 and "harness digests differ" in refused.err
    with Ledger.open(ledger_dir, registry=REGISTRY, create=False) as led:
        html = compare_page(led, "r1/a", "r2/a")
    assert 'class="verdict' in html
    assert re.search(r'data-warning="setup">warning: harness digests differ', html), html
    assert "CI undefined" in html
