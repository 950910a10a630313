"""The worker loop: claim an attempt, execute it, release it, until nothing is pending.

Every runner (local processes, Docker containers, Slurm jobs) ends up here, through
``aka worker``. The loop is a thin shell over two injected calls, ``pending`` and
``execute`` (an :class:`AttemptSource`), so it runs the same against the orchestrator
and against a test stand-in.
"""

from __future__ import annotations

import importlib
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from aka.errors import InputError
from aka_runners._claims import claim_next, key_state
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


class AttemptSource(Protocol):
    """Where a worker gets work from and how it runs it (the orchestrator in production)."""

    def pending(self) -> Sequence[Any]:
        """Attempt plans still to run; each has ``.key`` (unique per run) and may have ``.try_no``."""
        ...

    def execute(self, plan: Any, *, device: str, worker_id: str) -> None:
        """Run one attempt end to end, appending its events."""
        ...


SourceFactory = Callable[[Path, str, str], AttemptSource]
"""``factory(ledger_dir, run_id, worker_id) -> AttemptSource``."""


@dataclass
class WorkerReport:
    """What one worker did, for progress lines and per-worker utilization.

    Attributes:
        worker_id: the worker's id (also written into its leases).
        executed: attempt keys run to completion, in order.
        busy_s: seconds spent inside ``execute``.
        wall_s: seconds from start to exit.
    """

    worker_id: str
    executed: list[str] = field(default_factory=list)
    busy_s: float = 0.0
    wall_s: float = 0.0

    @property
    def utilization(self) -> float:
        """Busy share of the worker's wall time (0 when it never ran)."""
        return self.busy_s / self.wall_s if self.wall_s > 0 else 0.0


def default_worker_id() -> str:
    """``host-pid``: unique across hosts and live processes, readable in audits."""
    return f"{socket.gethostname()}-{os.getpid()}"


def _tag(plan: Any) -> str:
    return str(getattr(plan, "try_no", ""))


def run_worker(
    root: Path,
    run_id: str,
    source: AttemptSource,
    *,
    worker_id: str,
    device: str = "cpu",
    lease_ttl_s: float = 60.0,
    poll_s: float | None = None,
    order: Callable[[Sequence[Any]], Sequence[Any]] | None = None,
    stop: threading.Event | None = None,
) -> WorkerReport:
    """Claim -> execute -> release until no attempt is pending (or ``stop`` is set).

    After winning a claim the plan is read again, and the attempt runs only if it is
    still pending, so a plan read while another worker was finishing it never runs it
    twice. When every pending attempt is held by another live worker, the loop waits and
    looks again: either the holder finishes (the attempt leaves the plan) or its lease expires
    (the holder died) and this worker takes it over. An exception from ``execute`` gives
    the lease back at once and propagates, so a broken worker stops loudly.

    Args:
        root: the ledger directory shared by every worker.
        run_id: the run to work on.
        source: pending plans and the call that executes one.
        worker_id: written into leases and passed to ``execute``.
        device: passed to ``execute``.
        lease_ttl_s: lease lifetime; a dead worker's attempt is retried after this long.
        poll_s: wait between looks when everything is held (default ``min(1, ttl/4)``).
        order: reorders the pending plans before claiming (e.g. longest first).
        stop: when set, the worker exits after its current attempt.
    """
    poll = poll_s if poll_s is not None else min(1.0, lease_ttl_s / 4)
    report = WorkerReport(worker_id)
    start = time.monotonic()
    try:
        while stop is None or not stop.is_set():
            plans = list(source.pending())
            if not plans:
                break
            if order is not None:
                plans = list(order(plans))
            by_key = {p.key: p for p in plans}
            tags = {p.key: _tag(p) for p in plans}
            claim = claim_next(root, run_id, by_key, worker_id, lease_ttl_s, tags=tags)
            if claim is None:
                states = {key_state(root, run_id, k, tags[k]) for k in by_key}
                if states == {"done"}:
                    break  # finished here, not yet visible in the plan we read
                time.sleep(poll)
                continue
            with claim:
                # Re-read after winning: the plan we claimed from may predate another
                # worker finishing this attempt (its events are durable before it releases).
                fresh = {p.key: p for p in source.pending()}.get(claim.key)
                if fresh is None:
                    continue
                began = time.monotonic()
                try:
                    source.execute(fresh, device=device, worker_id=worker_id)
                finally:
                    report.busy_s += time.monotonic() - began
                report.executed.append(claim.key)
    finally:
        report.wall_s = time.monotonic() - start
    return report


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
