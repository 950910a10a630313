"""What ``aka worker`` needs around the work loop: its id, its attempt source.

Every runner (local processes, Docker containers, Slurm jobs) starts ``aka worker``,
which runs :func:`aka.workloop.run_worker` (the loop the inline runner runs too) over
the orchestrator's attempts, or over a test stand-in named by ``--source``.
"""

from __future__ import annotations

import importlib
import os
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aka.errors import InputError
from aka.workloop import AttemptSource, WorkerReport, run_worker
from aka_runners._order import longest_first, task_estimates

__all__ = [
    "AttemptSource",
    "SourceFactory",
    "WorkerReport",
    "default_worker_id",
    "load_source_factory",
    "orchestrator_source",
    "run_worker",
]


SourceFactory = Callable[[Path, str, str], AttemptSource]
"""``factory(ledger_dir, run_id, worker_id) -> AttemptSource``."""


def default_worker_id() -> str:
    """``host-pid``: unique across hosts and live processes, readable in audits."""
    return f"{socket.gethostname()}-{os.getpid()}"


def load_source_factory(spec: str | None) -> SourceFactory:
    """The factory named ``module:callable``, or the orchestrator's when ``spec`` is None."""
    if spec is None:
        return orchestrator_source
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise InputError(
            f"bad source {spec!r}", where="--source", fix="use 'package.module:factory'"
        )
    try:
        factory: SourceFactory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise InputError(
            f"cannot load {spec!r}: {exc}", where="--source", fix="check PYTHONPATH and the name"
        ) from exc
    return factory


class _OrchestratorSource:
    """The production source: plans and executions from ``aka.orchestrator``."""

    def __init__(self, ledger_dir: Path, run_id: str, worker_id: str):
        from aka import orchestrator
        from aka.errors import NotFoundError
        from aka.events import REGISTRY
        from aka_ledger import Ledger

        if not Path(ledger_dir).is_dir():
            raise NotFoundError(
                "no ledger here", where=str(ledger_dir), fix="pass --ledger DIR (or set AKA_LEDGER)"
            )
        self._orch = orchestrator
        self._ledger = Ledger.open(Path(ledger_dir), registry=REGISTRY)
        self._ctx = orchestrator.open_run(self._ledger, run_id)
        self._run_id = run_id
        self.target_device: str = self._ctx.started.device
        history = self._ledger.events(types=["AttemptPlanned", "AttemptStarted", "AttemptFinished"])
        self._estimates = task_estimates(history)

    def pending(self) -> Sequence[Any]:
        plans = self._orch.pending_attempts(self._ledger, self._run_id)
        return longest_first(plans, self._estimates)

    def execute(self, plan: Any, *, device: str, worker_id: str) -> None:
        # The device is the run's (checked by preflight); the orchestrator reads it there.
        self._orch.execute_attempt(
            self._ledger, self._run_id, plan, worker_id=worker_id, ctx=self._ctx
        )

    def close(self) -> None:
        self._ctx.tasks.close()
        self._ledger.close()


def orchestrator_source(ledger_dir: Path, run_id: str, worker_id: str) -> AttemptSource:
    """The source every ``aka worker`` uses unless a test injects another."""
    return _OrchestratorSource(ledger_dir, run_id, worker_id)
