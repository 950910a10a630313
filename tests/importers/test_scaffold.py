"""``aka tasks new`` writes task folders that pass validation as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aka import events as ev
from aka.importers import TASK_TYPES, scaffold_task
from aka.tasks import load_task
from aka.validate import validate_task
from aka_ledger import Ledger


@pytest.mark.parametrize("kind", TASK_TYPES)
def test_every_type_loads_and_passes_quick_checks(kind: str, tmp_path: Path) -> None:
    folder = scaffold_task("silu_demo", kind, tmp_path)
    task = load_task(folder, root=tmp_path)
    assert task.spec.type == kind
    assert task.spec.backend == ("cuda" if kind.endswith("cuda") else "triton")
    assert task.spec.reference_visible == (kind != "instruction2triton")
    with Ledger.open(tmp_path / "led", registry=ev.REGISTRY, create=True) as led:
        res = validate_task(led, folder, root=tmp_path, device="cpu", run_id="v", quick=True)
    statuses = {c.name: c.status for c in res.checks}
    assert res.ok, statuses
    assert statuses["null_reference_call"] == "pass"  # the reference's op is forbidden


def test_torch2triton_template_passes_full_validation_on_cpu(tmp_path: Path, cli) -> None:
    root = tmp_path / "tasks"
    made = cli("tasks", "new", "silu_demo", "--type", "torch2triton", "--root", str(root))
    assert made.code == 0 and "aka tasks validate torch2triton/new/silu_demo" in made.out
    res = cli(
        "tasks", "validate", "--root", str(root), "--device", "cpu",
        "--ledger", str(tmp_path / "led"), "--format", "json",
    )  # fmt: skip
    assert res.code == 0, res.out + res.err
    (task,) = json.loads(res.out)["tasks"]
    checks = {c["name"]: c["status"] for c in task["checks"]}
    for name in ("baseline_passes", "baseline_passes_heldout", "null_zeros_evaluated"):
        assert checks[name] == "pass", checks


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["instruction2triton"])
def test_torch_templates_pass_full_validation_on_cpu(kind: str, tmp_path: Path, cli) -> None:
    scaffold_task("silu_demo", kind, tmp_path / "tasks")
    res = cli(
        "tasks",
        "validate",
        "--root",
        str(tmp_path / "tasks"),
        "--device",
        "cpu",
        "--ledger",
        str(tmp_path / "l"),
    )
    assert res.code == 0, res.out + res.err


def test_bad_names_and_types(tmp_path: Path, cli) -> None:
    res = cli("tasks", "new", "Bad Name", "--root", str(tmp_path))
    assert res.code == 2 and "bad_name" in res.err
    res = cli("tasks", "new", "ok", "--type", "rust2triton", "--root", str(tmp_path))
    assert res.code == 2 and "triton2triton" in res.err
    assert cli("tasks", "new", "ok", "--root", str(tmp_path)).code == 0
    again = cli("tasks", "new", "ok", "--root", str(tmp_path))
    assert again.code == 2 and "--force" in again.err
