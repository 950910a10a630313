"""Two runs of one config compare without --force, whatever caches the first run left."""

from __future__ import annotations

import json
from pathlib import Path

from arena_helpers import harness_copy, write_config  # noqa: F401


def _litter(root: Path) -> None:
    """What running Python and opening an editor leave behind."""
    for folder in [p for p in root.rglob("*") if p.is_dir()] + [root]:
        if folder.name == "__pycache__":
            continue
        for py in folder.glob("*.py"):
            cache = folder / "__pycache__"
            cache.mkdir(exist_ok=True)
            (cache / f"{py.stem}.cpython-312.pyc").write_bytes(
                b"\x00\x0d\x0d\x0a" + py.name.encode()
            )
    (root / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")


def test_the_same_config_twice_has_one_harness_and_compares(
    cli,
    tmp_path: Path,
    tasks_root: Path,
    ledger_dir: Path,
    harness_copy: Path,  # noqa: F811 (the fixture imported above)
) -> None:
    cfg = write_config(tmp_path, tasks_root, arms=[{"name": "a", "agent": "noop"}], repeats=2)
    assert cli("run", str(cfg), "--ledger", str(ledger_dir), "--run-id", "r1").code == 0
    _litter(harness_copy)
    _litter(tasks_root / "torch" / "ops" / "affine")
    (tasks_root / "torch" / "ops" / "affine" / "task.yaml~").write_text("name: old\n")
    assert cli("run", str(cfg), "--ledger", str(ledger_dir), "--run-id", "r2").code == 0

    runs = json.loads(cli("sql", "SELECT run_id, harness_digest FROM runs", "--ledger",
                          str(ledger_dir), "--format", "json").out)  # fmt: skip
    assert len({r["harness_digest"] for r in runs}) == 1, runs
    res = cli("compare", "r1/a", "r2/a", "--ledger", str(ledger_dir), "--format", "json")
    assert res.code == 0, res.err
    out = json.loads(res.out)
    assert out["warnings"] == []
    assert out["verdict"] == "no detectable difference"
