"""Rewards only from judges a candidate cannot reach, unless the caller says otherwise.

A command-driven task's scripts import the candidate's code into the very process that
checks and times it, so a candidate can end that process with status 0 and write its own
performance report. The test shows such a forger scoring "correct" with a speedup it never
earned once the evaluator is told to accept such tasks, and that it is refused by default,
as a trainer's reward function would call it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import repo_project as rp
import yaml

from aka.api import UNSEALED_ENV, Evaluator
from aka.config import TimingSettings
from aka.errors import InputError
from aka.events import REGISTRY
from aka.kinds import sealed
from aka.tasks import load_task
from aka_ledger import Ledger

KEY = "kinds/demo/scale"
FAST = TimingSettings(max_time_s=0.2, min_samples=3)
BUNDLED = Path(__file__).resolve().parents[2] / "tasks"

# Inside the editable kernel file: the checker and the benchmark import it first.
FORGER = """import json, os, sys

if sys.argv[0].endswith("check.py"):
    os._exit(0)  # "correct"
if sys.argv[0].endswith("bench.py") and os.path.basename(os.getcwd()) == "cand":
    os.makedirs("build", exist_ok=True)
    report = [{"test_case_id": f"n{n}", "execution_time_ms": 1e-6, "params": {"n": n}}
              for n in (500, 2000)]
    json.dump(report, open("build/performance_report.json", "w"))
    os._exit(0)


def scale(x):
    return x * 3.0  # wrong
"""


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AKA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(UNSEALED_ENV, raising=False)
    folder = tmp_path / "tasks" / KEY
    for rel, text in rp.project_files(rp.GOOD_KERNEL).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    spec = rp.task_spec({"type": "command"}, python=sys.executable)
    (folder / "task.yaml").write_text(yaml.safe_dump(spec))
    (folder / "workloads").mkdir()
    (folder / "workloads" / "shapes.json").write_text("[500, 2000]")
    return tmp_path / "tasks"


def test_a_command_task_is_refused_by_default(root: Path, tmp_path: Path) -> None:
    led = Ledger.open(tmp_path / "ledger", registry=REGISTRY)
    with (
        Evaluator(led, tasks_root=root, device="cpu", timing=FAST) as api,
        pytest.raises(InputError) as err,
    ):
        api.evaluate(KEY, {"kernels/scale.py": FORGER})
    text = str(err.value)
    assert KEY in text and "command kind" in text and "forge" in text
    assert UNSEALED_ENV in text and "--unsealed" in text
    assert not list(led.events(types=["Scored"]))  # nothing was evaluated or rewarded


def test_a_forger_wins_where_the_task_judges_itself(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why: told to accept the task (here through the environment), the evaluator gives
    a wrong kernel that fools the scripts a correct verdict and a large speedup."""
    monkeypatch.setenv(UNSEALED_ENV, "1")
    led = Ledger.open(tmp_path / "ledger", registry=REGISTRY)
    with Evaluator(led, tasks_root=root, device="cpu", timing=FAST) as api:
        forged = api.evaluate(KEY, {"kernels/scale.py": FORGER})
        honest_wrong = api.evaluate(KEY, {"kernels/scale.py": rp.WRONG_KERNEL})
    assert forged.correct and forged.speedup is not None and forged.speedup > 100
    assert not honest_wrong.correct


def test_kernel_tasks_are_sealed_and_command_tasks_are_not(root: Path) -> None:
    assert sealed(load_task(BUNDLED / "triton2triton/llm/softmax", root=BUNDLED))
    assert not sealed(load_task(root / KEY, root=root))
