"""The prompt builder: deterministic, and it says what the agent may change and how it is judged."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aka.prompt import build_prompt, device_sheet
from aka.tasks import Task, load_task

TASKS = Path(__file__).resolve().parents[2] / "tasks"


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(TASKS / "triton2triton" / "llm" / "softmax", root=TASKS)


def test_same_inputs_same_text(task: Task) -> None:
    a = build_prompt(
        task, device="cuda", eval_command="aka eval", extra_sections=["## Hint\n\nfuse"]
    )
    b = build_prompt(
        task.model_copy(deep=True),
        device="cuda",
        eval_command="aka eval",
        extra_sections=["## Hint\n\nfuse"],
    )
    assert a == b


def test_prompt_names_files_targets_rules_and_self_eval(task: Task) -> None:
    text = build_prompt(task, device="cuda:0", eval_command="aka eval")
    s = task.spec
    assert s.instructions.strip() in text
    for name in [*s.editable, *s.targets, *s.forbidden, *s.tunables]:
        assert f"`{name}`" in text
    assert "Only the editable files" in text and "result or score files" in text
    assert "Run `aka eval` in the workspace" in text and "none of them is your score" in text
    assert "NVIDIA H200 (cuda:0)" in text and "4.3 TB/s" in text
    for shape in s.shapes.tuning:
        assert ", ".join(f"{k}={v}" for k, v in shape.items()) in text
    for shape in s.shapes.heldout:  # held-out shapes are never shown
        assert ", ".join(f"{k}={v}" for k, v in shape.items()) not in text
    assert f"{len(s.shapes.heldout)} held-out shapes" in text


def test_cpu_prompt_uses_cpu_shapes_and_sheet(task: Task) -> None:
    text = build_prompt(task, device="cpu", eval_command=None)
    assert device_sheet("cpu") in text and "H200" not in text
    assert "M=4, N=96" in text and "M=4096, N=4096" not in text
    assert "No self-evaluation command" in text and "aka eval" not in text


def test_hidden_reference_is_said(task: Task) -> None:
    hidden = task.model_copy(
        update={"spec": task.spec.model_copy(update={"reference_visible": False})}
    )
    text = build_prompt(hidden, device="cuda", eval_command="aka eval")
    assert "not in your workspace" in text and "reference.py" not in text


@given(
    st.lists(
        st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=40).filter(str.strip),
        max_size=4,
    )
)
def test_extra_sections_come_last_in_order(sections: list[str]) -> None:
    task = load_task(TASKS / "triton2triton" / "llm" / "softmax", root=TASKS)
    text = build_prompt(task, device="cuda", eval_command="aka eval", extra_sections=sections)
    base = build_prompt(task, device="cuda", eval_command="aka eval")
    assert text.startswith(base.rstrip("\n"))
    tail = text[len(base.rstrip("\n")) :]
    assert tail == "".join(f"\n\n{s.strip()}" for s in sections) + "\n"
