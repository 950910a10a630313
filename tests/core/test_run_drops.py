"""``aka run`` names every selected task it leaves out, and why; it never drops one silently."""

from __future__ import annotations

import shutil
from pathlib import Path

from arena_helpers import write_config


def test_run_names_the_tasks_it_drops(
    cli, tmp_path: Path, tasks_root: Path, ledger_dir: Path
) -> None:
    gpu = tasks_root / "torch/ops/affine_gpu"
    shutil.copytree(tasks_root / "torch/ops/affine", gpu)
    spec = gpu / "task.yaml"
    text = spec.read_text().replace("name: affine", "name: affine_gpu")
    spec.write_text(text + "devices: [cuda]\n")
    cfg = write_config(tmp_path, tasks_root, tasks=["torch/ops"])
    res = cli("run", str(cfg), "--ledger", str(ledger_dir), "--run-id", "drops")
    assert res.code == 0, res.err
    (line,) = [x for x in res.err.splitlines() if x.startswith("dropped ")]
    assert "torch/ops/affine_gpu" in line and "device is cpu" in line and "fix:" in line
    assert "affine:" not in res.err  # the runnable task is not named
