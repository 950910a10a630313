"""A staged task is a copy outside the task suite, yet the suite stays hidden from candidates.

The API and validation judge a task loaded from its staged tree (a temporary copy), so
the task suite can no longer be found by walking up from the task's folder; the request
names the suite it was staged from, and the candidate process must not see it (where
held-out shapes and other tasks' references live).
"""

from __future__ import annotations

from pathlib import Path

from aka.api import Evaluator
from aka.config import TimingSettings
from aka.events import REGISTRY
from aka_ledger import Ledger

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
KEY = "torch/ops/affine"
PEEKING = """import os


def affine(x):
    seen = os.path.exists({spec!r})  # the suite's own copy of this task
    return x * 3 if seen else x * 2 + 1
"""


def test_the_api_hides_the_suite_a_task_was_staged_from(tmp_path: Path) -> None:
    root = FIXTURES  # outside the temporary folder, which every candidate gets private
    spec = str((root / KEY / "task.yaml").resolve())
    led = Ledger.open(tmp_path / "ledger", registry=REGISTRY)
    with Evaluator(led, tasks_root=root, device="cpu", timing=TimingSettings(max_time_s=0.1,
                   min_samples=3)) as api:  # fmt: skip
        assert not api.task(KEY).path.is_relative_to(root.resolve())  # judged from a copy
        result = api.evaluate(KEY, {"kernel.py": PEEKING.format(spec=spec)})
    assert result.correct, result.error  # the suite's task.yaml was not there to be seen
