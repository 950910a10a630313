"""Helpers for arena tests: write configs, read reports."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

import aka.orchestrator
from aka.eval import harness_paths


def write_config(
    tmp: Path,
    tasks_root: Path,
    *,
    arms: list[dict[str, Any]] | None = None,
    name: str = "run.yaml",
    **extra: Any,
) -> Path:
    """A CPU run config over the fixture tasks with fast timing."""
    cfg: dict[str, Any] = {
        "label": "t",
        "tasks": ["torch/ops/affine"],
        "tasks_root": str(tasks_root),
        "arms": arms or [{"name": "baseline", "agent": "noop"}],
        "device": "cpu",
        "timing": {"max_time_s": 0.2, "min_samples": 5},
    }
    cfg.update(extra)
    path = tmp / name
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture
def harness_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The evaluator's code copied aside and recorded from there.

    A test can then litter or edit the harness between two runs (as a first run's
    imports or a code change would) without touching the repository.
    """
    root, paths = harness_paths()
    dest = tmp_path / "harness"
    for rel in paths:
        src = root / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    monkeypatch.setattr(aka.orchestrator, "harness_paths", lambda: (dest, list(paths)))
    return dest
