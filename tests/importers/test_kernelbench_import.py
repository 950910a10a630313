"""A folder of KernelBench problems becomes tasks that validate, run through the evaluator,
and forbid the original; importing again needs --force."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from aka import events as ev
from aka.eval import EvalRequest, evaluate
from aka.heldout import baseline_task
from aka.kinds import baseline_tree
from aka.orchestrator import harness_digest
from aka.tasks import load_task
from aka.validate import default_timing, validate_task
from aka_ledger import Ledger

FIXTURES = Path(__file__).resolve().parent / "fixtures"
KB = FIXTURES / "kernelbench"


@pytest.fixture
def imported(tmp_path: Path, cli) -> Path:
    root = tmp_path / "tasks"
    res = cli("tasks", "import", "kernelbench", str(KB), "--root", str(root))
    assert res.code == 0, res.err
    assert "-> torch2triton/kernelbench/7_scaled_tanh_sum: tuning" in res.out
    assert "12_linear_gelu_solution.py" in res.err and "ModelNew" in res.err  # a solution, skipped
    return root


def test_spec_records_origin_sizes_and_forbidden(imported: Path) -> None:
    folder = imported / "torch2triton" / "kernelbench" / "12_linear_gelu"
    task = load_task(folder, root=imported)
    spec = task.spec
    assert re.search(r"12_linear_gelu\.py @ [0-9a-f]{40}$", spec.origin)  # path and commit
    assert spec.shapes.tuning == [{"batch": 128, "in_features": 1024, "out_features": 512}]
    assert spec.shapes.heldout and spec.shapes.heldout[0] != spec.shapes.tuning[0]
    assert spec.shapes.cpu and "cpu" in spec.devices  # the derived CPU shapes ran
    assert "torch.nn.functional.gelu" in spec.forbidden and "problem.Model" in spec.forbidden
    assert (folder / "problem.py").read_text() == (KB / "12_linear_gelu.py").read_text()
    assert "class ModelNew(nn.Module)" in (folder / "source" / "model_new.py").read_text()


def test_imported_tasks_pass_quick_validation(imported: Path, tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "led", registry=ev.REGISTRY, create=True) as led:
        for folder in sorted((imported / "torch2triton" / "kernelbench").iterdir()):
            res = validate_task(led, folder, root=imported, device="cpu", run_id="v", quick=True)
            assert res.ok, [c for c in res.checks if c.status == "fail"]


def test_baseline_passes_and_calling_the_original_model_is_flagged(
    imported: Path, tmp_path: Path
) -> None:
    folder = imported / "torch2triton" / "kernelbench" / "7_scaled_tanh_sum"
    task = load_task(folder, root=imported)
    cheat = tmp_path / "cheat"
    cheat.mkdir()
    (cheat / "model_new.py").write_text(
        (folder / "source" / "model_new.py").read_text()
        + "\n\nclass ModelNew(_problem.Model):\n    pass\n"
    )
    with Ledger.open(tmp_path / "led", registry=ev.REGISTRY, create=True) as led:

        def run(t: object, tree: str) -> ev.Scored:
            req = EvalRequest(
                task=t, task_tree=led.cas.snapshot(folder), candidate=tree,  # type: ignore[arg-type]
                harness=harness_digest(led), device="cpu", policy="agentkernelarena",
                timing=default_timing("cpu"), purpose="validate", time=False,
            )  # fmt: skip
            return evaluate(led, "kb", None, req)

        base = run(baseline_task(task), baseline_tree(led.cas, task))
        assert base.compiled and base.correct, base.error
        flagged = run(task, led.cas.snapshot(cheat))
        assert not flagged.correct and "problem.Model" in (flagged.error or "")


def test_existing_folder_needs_force(imported: Path, cli) -> None:
    again = cli(
        "tasks", "import", "kernelbench", str(KB / "7_scaled_tanh_sum.py"), "--root", str(imported)
    )
    assert again.code == 2 and "--force" in again.err
    forced = cli(
        "tasks", "import", "kernelbench", str(KB / "7_scaled_tanh_sum.py"),
        "--root", str(imported), "--type", "torch2cuda", "--force",
    )  # fmt: skip
    assert forced.code == 0, forced.err
    spec = yaml.safe_load(
        (imported / "torch2cuda/kernelbench/7_scaled_tanh_sum/task.yaml").read_text()
    )
    assert spec["backend"] == "cuda" and spec["devices"] == ["cuda"]


def test_inputs_are_drawn_on_the_evaluation_device(imported: Path) -> None:
    """Upstream get_inputs() calls torch.rand(...) on the CPU; at upstream sizes that is
    gigabytes per call, so the factories must run on the device the evaluation uses."""
    import importlib.util

    import torch

    task = next(p.parent for p in sorted(imported.rglob("task.yaml")))
    spec = importlib.util.spec_from_file_location("kb_ref_device", task / "reference.py")
    assert spec and spec.loader
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    shape = yaml.safe_load((task / "task.yaml").read_text())["shapes"]["tuning"][0]
    seen: list[str] = []
    real = ref.load_problem

    def spying(shape: dict[str, int], path: object = None) -> object:
        problem = real(shape, path)
        inner = problem.get_inputs
        problem.get_inputs = lambda: (seen.append(torch.empty(0).device.type), inner())[1]
        return problem

    ref.load_problem = spying
    # On the meta device nothing is allocated, whatever the upstream sizes.
    inputs = ref.make_inputs(shape, torch.float32, "meta", 1)
    assert seen == ["meta"]
    assert all(x.device.type == "meta" for x in inputs if isinstance(x, torch.Tensor))
    again = ref.make_inputs(yaml.safe_load((task / "task.yaml").read_text())["shapes"]["cpu"][0],
                            torch.float32, "cpu", 1)  # fmt: skip
    assert all(x.device.type == "cpu" for x in again if isinstance(x, torch.Tensor))
