"""`aka check KERNEL --task T`: one file scored by the arena's evaluator, as an attempt."""

from __future__ import annotations

import json
from pathlib import Path

FAST = (
    "import torch\n\n\ndef affine(x):\n"
    "    return torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))\n"
)
WRONG = "import torch\n\n\ndef affine(x):\n    return x * 2\n"


def test_a_kernel_file_is_scored_and_recorded(
    cli, tmp_path: Path, tasks_root: Path, ledger_dir: Path
) -> None:
    fast, wrong = tmp_path / "fast.py", tmp_path / "my_affine.py"
    fast.write_text(FAST)
    wrong.write_text(WRONG)
    common = ["--task", "torch/ops/affine", "--root", str(tasks_root), "--device", "cpu",
              "--ledger", str(ledger_dir)]  # fmt: skip
    res = cli("check", str(fast), *common, "--format", "json")
    assert res.code == 0, res.err
    good = json.loads(res.out)
    assert good["compiled"] and good["correct"] and good["speedup"] > 0
    bad = json.loads(cli("check", str(wrong), *common, "--format", "json").out)
    assert bad["compiled"] and not bad["correct"] and bad["reward"] == 20.0

    runs = json.loads(cli("status", "--ledger", str(ledger_dir), "--format", "json").out)
    assert {r["run_id"] for r in runs} == {good["run_id"], bad["run_id"]}
    assert {(r["label"], r["status"], r["scored"]) for r in runs} == {("check", "finished", 1)}
    audited = cli("audit", good["attempt_key"], "--run", good["run_id"], "--diff",
                  "--ledger", str(ledger_dir))  # fmt: skip
    assert audited.code == 0 and "torch.addcmul" in audited.out


def test_a_missing_file_or_task_is_a_clear_error(
    cli, tmp_path: Path, tasks_root: Path, ledger_dir: Path
) -> None:
    common = ["--root", str(tasks_root), "--device", "cpu", "--ledger", str(ledger_dir)]
    missing = cli("check", str(tmp_path / "nope.py"), "--task", "torch/ops/affine", *common)
    assert missing.code == 2 and "nope.py is not a file" in missing.err
    (tmp_path / "k.py").write_text(FAST)
    unknown = cli("check", str(tmp_path / "k.py"), "--task", "torch/ops/nope", *common)
    assert unknown.code == 2 and "Traceback" not in unknown.err
    spec = tasks_root / "torch/ops/affine/task.yaml"
    spec.write_text(
        spec.read_text().replace("editable: [kernel.py]", "editable: [kernel.py, util.py]")
    )
    (tasks_root / "torch/ops/affine/source/util.py").write_text("")
    two = cli("check", str(tmp_path / "k.py"), "--task", "torch/ops/affine", *common)
    assert two.code == 2 and "--as" in two.err and "kernel.py" in two.err
