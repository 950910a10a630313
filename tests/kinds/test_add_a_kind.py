"""Adding a task kind and a backend, done once as docs/architecture.md says.

A kind is one class (stage, lay out, judge, checks) and one ``register_kind`` line; a
backend is one row of ``aka.backends.BACKENDS``. The toy kind below judges a candidate
by whether its editable file holds the line the task expects, and goes through
``aka tasks validate`` like the bundled kinds: staged, judged through the evaluator,
recorded.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from aka import events as ev
from aka.backends import BACKENDS, Backend
from aka.errors import InputError
from aka.eval import EvalRequest
from aka.eval._pipeline import Verdict
from aka.events import REGISTRY
from aka.kinds import CheckContext, Stage, baseline_tree, register_kind, unregister_kind
from aka.tasks import Task, load_task
from aka.validate import validate_task
from aka_ledger import Ledger


class AnswerKind:
    """A toy kind: the candidate's ``answer.py`` must contain the task's expected line."""

    name = "answer"

    def stage(self, task: Task, dest: Path) -> None:
        shutil.copytree(task.path, dest, dirs_exist_ok=True)

    def lay_out(self, ledger: Ledger, req: EvalRequest, dest: Path) -> dict[str, Path]:
        ledger.cas.materialize(req.task_tree, dest / "task")
        ledger.cas.materialize(req.candidate, dest / "cand")
        return {"task": dest / "task", "cand": dest / "cand"}

    def judge(self, ledger: Ledger, req: EvalRequest, dest: Path, *, seed: int) -> Verdict:
        expected = (dest / "task" / "expected.txt").read_text().strip()
        answer = dest / "cand" / "answer.py"
        ok = answer.is_file() and expected in answer.read_text()
        case = {"shape": {}, "dtype": "task", "seed": seed, "ok": ok, "max_abs_err": None,
                "error": None if ok else "wrong answer"}  # fmt: skip
        return Verdict(
            compiled={"ok": True, "error": None, "wall_s": 0.0},
            cases=[case],
            timing=[],
            device={"device": req.device, "judge": "answer kind"},
            flags=[],
            evidence=[],
            correct=ok,
            error=None if ok else f"answer.py does not contain {expected!r}",
            network="none",
        )

    def checks(self, ctx: CheckContext) -> list[Stage]:
        def expected_exists() -> None:
            found = (ctx.task.path / "expected.txt").is_file()
            ctx.out.add("expected_file", "pass" if found else "fail", "expected.txt")

        def baseline() -> None:
            scored = ctx.judge(baseline_tree(ctx.ledger.cas, ctx.task), baseline=True)
            ctx.out.add("baseline_passes", "pass" if scored.correct else "fail", str(scored.error))

        return [("static", expected_exists), ("evaluator", baseline)]


@pytest.fixture
def answer_kind() -> Iterator[None]:
    """The one registration line a new kind needs (and its removal after the test)."""
    register_kind(AnswerKind())
    yield
    unregister_kind("answer")


def _task(root: Path, *, answer: str, backend: str = "torch") -> Path:
    folder = root / "answer" / "demo" / "forty_two"
    (folder / "source").mkdir(parents=True)
    spec = {
        "name": "forty_two", "type": "answer", "kind": "answer", "backend": backend,
        "instructions": "Make answer() return the answer.", "reference": "expected.txt",
        "editable": ["answer.py"], "entry": "answer.py:answer", "dtypes": ["float32"],
        "tolerances": {"float32": {"atol": 0.0, "rtol": 0.0}},
        "shapes": {"tuning": [{"n": 1}], "cpu": [{"n": 1}]}, "devices": ["cpu"],
    }  # fmt: skip
    (folder / "task.yaml").write_text(yaml.safe_dump(spec))
    (folder / "expected.txt").write_text("return 42\n")
    (folder / "source" / "answer.py").write_text(f"def answer():\n    {answer}\n")
    return folder


def test_an_unregistered_kind_is_a_schema_failure_naming_the_field(tmp_path: Path) -> None:
    led = Ledger.memory(registry=REGISTRY)
    folder = _task(tmp_path, answer="return 42")
    res = validate_task(led, folder, root=tmp_path, device="cpu", run_id="v0")
    (schema,) = res.checks
    assert schema.status == "fail"
    assert "field 'kind': no task kind 'answer'" in schema.detail
    assert "registered: ['command', 'image', 'kernel', 'repository']" in schema.detail


@pytest.mark.usefixtures("answer_kind")
@pytest.mark.parametrize(("answer", "ok"), [("return 42", True), ("return 41", False)])
def test_a_registered_kind_is_validated_through_the_evaluator(
    tmp_path: Path, answer: str, ok: bool
) -> None:
    led = Ledger.memory(registry=REGISTRY)
    folder = _task(tmp_path, answer=answer)
    res = validate_task(led, folder, root=tmp_path, device="cpu", run_id="v1")
    status = {c.name: c.status for c in res.checks}
    assert status["schema"] == "pass" and status["expected_file"] == "pass"
    assert status["baseline_passes"] == ("pass" if ok else "fail")
    assert res.ok is ok
    (scored,) = [e.payload for e in led.events(run_id="v1", types=["Scored"])]
    assert isinstance(scored, ev.Scored)
    assert scored.purpose == "validate" and scored.correct is ok
    assert [scored.eval_id] == res.eval_ids
    assert res.task_tree == led.cas.snapshot(folder)  # the toy kind stages the folder as is


def test_a_backend_is_one_row_of_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _task(tmp_path, answer="return 42", backend="answerlang")
    with pytest.raises(InputError, match=r"field 'backend': .*unknown backend 'answerlang'"):
        load_task(folder)
    row = Backend(
        name="answerlang", label="AnswerLang", suffixes=(".py",), requires=(),
        compile_step="none", devices=("cpu",), must_launch=False,
    )  # fmt: skip
    monkeypatch.setitem(BACKENDS, "answerlang", row)
    assert load_task(folder).spec.backend == "answerlang"


def test_an_entry_file_must_suit_its_backend(tmp_path: Path) -> None:
    folder = _task(tmp_path, answer="return 42", backend="triton")
    text = (folder / "task.yaml").read_text().replace("answer.py:answer", "answer.cu:answer")
    (folder / "task.yaml").write_text(text)
    with pytest.raises(InputError, match=r"entry file of a triton task must end in one of"):
        load_task(folder)
