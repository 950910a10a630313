"""A/A through the whole pipeline: two noop arms come out "no detectable difference"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from arena_helpers import write_config


def test_two_noop_arms_show_no_difference(
    cli, tmp_path: Path, tasks_root: Path, ledger_dir: Path
) -> None:
    shutil.copytree(tasks_root / "torch/ops/affine", tasks_root / "torch/ops/affine_b")
    spec = tasks_root / "torch/ops/affine_b/task.yaml"
    spec.write_text(spec.read_text().replace("name: affine", "name: affine_b"))
    cfg = write_config(
        tmp_path, tasks_root, tasks=["torch/ops"], repeats=2,
        arms=[{"name": "a", "agent": "noop"}, {"name": "b", "agent": "noop"}],
    )  # fmt: skip
    assert cli("run", str(cfg), "--ledger", str(ledger_dir), "--run-id", "aa").code == 0
    res = cli("compare", "aa/a", "aa/b", "--ledger", str(ledger_dir), "--format", "json")
    assert res.code == 0, res.err
    out = json.loads(res.out)
    assert (
        out["verdict"]["verdict"] == "no detectable difference"
        if isinstance(out["verdict"], dict)
        else out["verdict"] == "no detectable difference"
    )
    same = cli("compare", "aa/a", "aa/a", "--ledger", str(ledger_dir))
    assert same.code == 2 and "itself" in same.err
    unknown = cli("compare", "aa/a", "nope", "--ledger", str(ledger_dir))
    assert unknown.code == 2 and "nope" in unknown.err
