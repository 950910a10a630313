"""``aka tasks validate``: sound tasks pass, each kind of broken task fails the right check."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from aka import events as ev
from aka.validate import task_folders, validate_task
from aka_ledger import Ledger

AFFINE = "torch/ops/affine"


def _clone(tasks_root: Path, name: str) -> Path:
    dest = tasks_root / "torch" / "ops" / name
    shutil.copytree(tasks_root / AFFINE, dest)
    spec = yaml.safe_load((dest / "task.yaml").read_text())
    spec["name"] = name
    (dest / "task.yaml").write_text(yaml.safe_dump(spec))
    return dest


def _edit_spec(folder: Path, **changes: object) -> None:
    spec = yaml.safe_load((folder / "task.yaml").read_text())
    spec.update(changes)
    (folder / "task.yaml").write_text(yaml.safe_dump(spec))


def _statuses(ledger_dir: Path, folder: Path, root: Path) -> dict[str, str]:
    with Ledger.open(ledger_dir, registry=ev.REGISTRY, create=True) as led:
        res = validate_task(led, folder, root=root, device="cpu", run_id="v", quick=True)
        recorded = led.events(run_id="v", types=["TaskValidated"])[-1].payload
    assert isinstance(recorded, ev.TaskValidated)
    assert recorded.ok == res.ok and recorded.checks == res.checks
    return {c.name: c.status for c in res.checks}


REF_HEAD = "import torch\n\n\n"
BROKEN = {
    # the true output is ~0, so an all-zeros answer passes
    "near_zero": (
        "reference.py",
        REF_HEAD + "def make_inputs(shape, dtype, device, seed):\n"
        "    g = torch.Generator().manual_seed(seed)\n"
        "    return (torch.randn(shape['N'], generator=g).to(dtype=dtype, device=device),)\n\n\n"
        "def reference(x):\n    return x.double() * 1e-9\n",
        "null_zeros",
    ),
    "ignores_seed": (
        "reference.py",
        REF_HEAD + "def make_inputs(shape, dtype, device, seed):\n"
        "    return (torch.linspace(-3, 3, shape['N'], dtype=dtype, device=device),)\n\n\n"
        "def reference(x):\n    return x.double() * 2 + 1\n",
        "output_depends_on_seed",
    ),
    "nondeterministic": (
        "reference.py",
        REF_HEAD + "def make_inputs(shape, dtype, device, seed):\n"
        "    g = torch.Generator().manual_seed(seed)\n"
        "    return (torch.randn(shape['N'], generator=g).to(dtype=dtype, device=device),)\n\n\n"
        "def reference(x):\n    return x.double() * 2 + 1 + torch.rand(x.shape, dtype=torch.float64)\n",
        "reference_deterministic",
    ),
    "identity": (
        "reference.py",
        REF_HEAD + "def make_inputs(shape, dtype, device, seed):\n"
        "    g = torch.Generator().manual_seed(seed)\n"
        "    return (torch.randn(shape['N'], generator=g).to(dtype=dtype, device=device),)\n\n\n"
        "def reference(x):\n    return x.double()\n",
        "null_input_copy",
    ),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_reference_fails_its_check(name: str, tasks_root: Path, ledger_dir: Path) -> None:
    folder = _clone(tasks_root, name)
    rel, text, check = BROKEN[name]
    (folder / rel).write_text(text)
    statuses = _statuses(ledger_dir, folder, tasks_root)
    assert statuses[check] == "fail", statuses
    assert statuses["schema"] == "pass"


def test_a_seed_that_changes_nothing_names_the_inputs_as_the_fix(
    tasks_root: Path, ledger_dir: Path
) -> None:
    """Inputs equal across seeds: the fix is make_inputs, not the problem."""
    folder = _clone(tasks_root, "ignores_seed")
    (folder / "reference.py").write_text(BROKEN["ignores_seed"][1])
    led = Ledger.open(ledger_dir, registry=ev.REGISTRY)
    res = validate_task(led, folder, root=tasks_root, device="cpu", run_id="v", quick=True)
    detail = next(c.detail for c in res.checks if c.name == "output_depends_on_seed")
    assert "draw every input from its seed argument" in detail
    assert "ignores its inputs" not in detail


def test_sound_fixture_passes_quick_checks(tasks_root: Path, ledger_dir: Path) -> None:
    statuses = _statuses(ledger_dir, tasks_root / AFFINE, tasks_root)
    assert "fail" not in statuses.values(), statuses
    for check in ("null_zeros", "null_empty", "null_garbage", "null_input_copy"):
        assert statuses[check] == "pass"


@pytest.mark.parametrize(
    ("changes", "check"),
    [
        ({"targets": ["affine", "missing_kernel"]}, "targets_exist"),
        ({"forbidden": ["torch.sofmax"]}, "forbidden_resolve"),
        (
            {"shapes": {"tuning": [{"N": 8}], "cpu": [{"N": 4096}], "cpu_heldout": [{"N": 4096}]}},
            "heldout_shapes",
        ),
        (
            {
                "shapes": {
                    "tuning": [{"N": 8}],
                    "heldout": [{"M": 9}],
                    "cpu": [{"N": 64}],
                    "cpu_heldout": [{"N": 65}],
                }
            },
            "heldout_shapes",
        ),
        ({"tunables": {"BLOCK": [1, 2]}}, "tunables"),
    ],
)
def test_spec_problems(
    changes: dict[str, object], check: str, tasks_root: Path, ledger_dir: Path
) -> None:
    folder = _clone(tasks_root, "spec_problem")
    _edit_spec(folder, **changes)
    assert _statuses(ledger_dir, folder, tasks_root)[check] == "fail"


@pytest.mark.parametrize(("extra", "status"), [("aka_stressed", "pass"), ("stressed", "fail")])
def test_an_input_variant_key_is_no_size_name(
    extra: str, status: str, tasks_root: Path, ledger_dir: Path
) -> None:
    """A held-out shape may carry an ``aka_`` key its tuning shapes lack (an input variant
    its reference reads, such as an imported task's stress case); any other extra key is
    a size the tuning shapes do not name."""
    folder = _clone(tasks_root, f"variant_{extra}")
    spec = yaml.safe_load((folder / "task.yaml").read_text())
    shapes = spec["shapes"]
    shapes["heldout"] = [*shapes["heldout"], {**shapes["heldout"][0], extra: 1}]
    shapes["cpu_heldout"] = [*shapes["cpu_heldout"], {**shapes["cpu_heldout"][0], extra: 1}]
    _edit_spec(folder, shapes=shapes)
    assert _statuses(ledger_dir, folder, tasks_root)["heldout_shapes"] == status


def test_forbidden_reference_copy_is_flagged(tasks_root: Path, ledger_dir: Path) -> None:
    folder = _clone(tasks_root, "forbids")
    (folder / "reference.py").write_text(
        (folder / "reference.py")
        .read_text()
        .replace("x.double() * 2 + 1", "torch.add(x.double() * 2, 1)")
    )
    _edit_spec(folder, forbidden=["torch.add"])
    assert _statuses(ledger_dir, folder, tasks_root)["null_reference_call"] == "pass"


def test_bad_yaml_is_a_failed_schema_check_not_a_crash(tasks_root: Path, ledger_dir: Path) -> None:
    folder = _clone(tasks_root, "bad_yaml")
    (folder / "task.yaml").write_text("name: [unclosed\n")
    statuses = _statuses(ledger_dir, folder, tasks_root)
    assert statuses == {"schema": "fail"}
    assert len(task_folders(tasks_root, [])) == 2  # still found, so still reported


def test_cli_end_to_end_with_evaluator_and_review(tasks_root: Path, tmp_path: Path, cli) -> None:
    """Through the real evaluator: the fixture passes; a wrong baseline fails; exit 1.

    The review (a command agent writing its verdict) is a separate, labelled check that
    never decides the outcome.
    """
    wrong = _clone(tasks_root, "wrong_baseline")
    (wrong / "source" / "kernel.py").write_text(
        "import torch\n\n\ndef affine(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n"
    )
    reviewer = tmp_path / "reviewer.py"
    reviewer.write_text(
        "import json, sys, pathlib\n"
        "ws = pathlib.Path(sys.argv[1])\n"
        "(ws / 'review.json').write_text(json.dumps({'verdict': 'fail', 'notes': 'too easy'}))\n"
    )
    arm = tmp_path / "review.yaml"
    arm.write_text(
        yaml.safe_dump(
            {
                "agent": "command",
                "options": {"command": [sys.executable, str(reviewer), "{workspace}"]},
            }
        )
    )
    res = cli(
        "tasks", "validate", "--root", str(tasks_root), "--device", "cpu",
        "--ledger", str(tmp_path / "led"), "--review-arm", str(arm), "--format", "json",
    )  # fmt: skip
    assert res.code == 1, res.err
    assert "1 of 2 task(s) failed" in res.err
    doc = {t["task"]: t for t in json.loads(res.out)["tasks"]}
    good, bad = doc[AFFINE], doc["torch/ops/wrong_baseline"]
    assert good["ok"] and not bad["ok"]
    checks = {c["name"]: c for c in good["checks"]}
    for name in ("baseline_passes", "baseline_passes_heldout", "null_zeros_evaluated"):
        assert checks[name]["status"] == "pass", checks[name]
    review = checks["review:command"]
    assert review["review"] and review["status"] == "fail" and review["detail"] == "too easy"
    assert {c["name"]: c["status"] for c in bad["checks"]}["baseline_passes"] == "fail"


def test_cli_bad_selector(tasks_root: Path, tmp_path: Path, cli) -> None:
    res = cli(
        "tasks", "validate", "nope", "--root", str(tasks_root), "--ledger", str(tmp_path / "l")
    )
    assert res.code == 2 and "does not exist" in res.err


def test_validations_view(tasks_root: Path, ledger_dir: Path) -> None:
    from aka.views import install_views

    folder = _clone(tasks_root, "near_zero")
    (folder / "reference.py").write_text(BROKEN["near_zero"][1])
    _statuses(ledger_dir, folder, tasks_root)
    _statuses(ledger_dir, tasks_root / AFFINE, tasks_root)
    with Ledger.open(ledger_dir, registry=ev.REGISTRY) as led:
        rows = (
            install_views(led.connect())
            .execute("SELECT task, ok, checks LIKE '%null_zeros%' FROM validations ORDER BY task")
            .fetchall()
        )
    assert rows == [(AFFINE, True, True), ("torch/ops/near_zero", False, True)]
