"""Task selectors: paths under the tasks root; a folder selects everything below it."""

from __future__ import annotations

from pathlib import Path

from aka.tasks import select


def test_folder_selectors_key_tasks_by_the_tasks_root() -> None:
    root = Path(__file__).resolve().parents[2] / "tasks"
    keys = [t.key for t in select(root, ["triton2triton/llm"])]
    assert "triton2triton/llm/softmax" in keys and all(
        k.startswith("triton2triton/llm/") for k in keys
    )
