"""Fixtures for arena tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import aka.orchestrator
from aka.eval import harness_paths


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
