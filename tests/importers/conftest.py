"""Fixtures shared by the importers' tests."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def copies(tmp_path: Path) -> Callable[[Path], tuple[Path, Path]]:
    """Copies of a task folder as an evaluation lays them out: ``base`` and ``cand`` under
    the test's ``tmp_path``."""

    def make(folder: Path) -> tuple[Path, Path]:
        base, cand = tmp_path / "base", tmp_path / "cand"
        shutil.copytree(folder, base)
        shutil.copytree(folder, cand)
        return base, cand

    return make
