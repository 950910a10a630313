"""Fixtures for the warm-worker tests: the evaluator's process layer, configured per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aka.eval._switches import Switches
from aka.eval._workers import Workers, configure


@pytest.fixture
def host_pids() -> bool:
    """Whether evaluation processes keep host PIDs (no PID namespace); tests that tell
    processes apart by the pid candidate code reports override this with ``True``."""
    return False


@pytest.fixture
def warm(host_pids: bool) -> Iterator[Workers]:
    """Warm workers for one test, made this process's; zygotes and spares stopped after."""
    workers = configure(Switches(warm=True, pid_namespace=not host_pids))
    yield workers
    configure()


@pytest.fixture
def cold(host_pids: bool) -> Iterator[Workers]:
    """Fresh interpreters for one test (warm workers off), made this process's."""
    workers = configure(Switches(warm=False, pid_namespace=not host_pids))
    yield workers
    configure()


@pytest.fixture
def no_clean_baseline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Evaluations without the baseline's clean timing (one more timed process per task,
    tested in tests/redteam), for tests that count each evaluation's own processes."""
    from aka.eval import _alone

    monkeypatch.setattr(
        _alone, "rebase_slowed", lambda job, root, timing, workers: (timing, [], [])
    )
