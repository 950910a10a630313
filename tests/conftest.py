"""Shared fixtures: a temporary ledger, fixture tasks, and an in-process CLI runner."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Fixture folders hold upstream files as upstream names them (rocmbench's test_*.py among
# them): they are data for the importers, never tests of this project.
collect_ignore_glob = ["*/fixtures/*"]
FIXTURE_TASKS = REPO / "tests" / "fixtures" / "tasks"


@dataclass
class CliResult:
    """Exit code and captured output of one CLI call."""

    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run ``aka ARGS`` in-process; return its exit code and output."""
    from aka.cli import main

    def invoke(*args: str) -> CliResult:
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return invoke


@pytest.fixture
def tasks_root(tmp_path: Path) -> Path:
    """A private copy of the fixture tasks (tests may break them)."""
    dest = tmp_path / "tasks"
    shutil.copytree(FIXTURE_TASKS, dest)
    return dest


@pytest.fixture
def ledger_dir(tmp_path: Path) -> Path:
    """Where a test's ledger lives."""
    return tmp_path / "ledger"


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Mount a tmpfs of a given size (``"20m"``) under ``tmp_path``: a disk that fills.

    Needs root and ``mount``; the test is skipped elsewhere. Unmounted afterwards.
    """
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        mnt = tmp_path / f"small-{len(mounted)}"
        mnt.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)])
        if done.returncode != 0:
            pytest.skip("cannot mount a tmpfs here")
        mounted.append(mnt)
        return mnt

    try:
        yield mount
    finally:
        for mnt in mounted:
            subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture(autouse=True)
def _no_ambient_ledger(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AKA_LEDGER", raising=False)


def pytest_configure(config: pytest.Config) -> None:
    """Run keys of every test run go to a fresh directory, never the user's state dir.

    Set once for the session (and inherited by every subprocess), so runs that session-
    and module-scoped fixtures record find their keys too.
    """
    os.environ["AKA_KEY_DIR"] = tempfile.mkdtemp(prefix="aka-test-keys-")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(os.environ.get("AKA_KEY_DIR", ""), ignore_errors=True)
