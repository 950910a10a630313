"""The work loop: claim an attempt, execute it, release it, until nothing is pending.

Every runner ends up here: the inline runner (``aka run`` in this process) calls it
directly, and local processes, Docker containers and Slurm jobs call it through
``aka worker``. So every attempt, whoever runs it, is claimed through the same lease
files (:mod:`aka.claims`) and never runs twice at once. The loop is a thin shell over
two injected calls, ``pending`` and ``execute`` (an :class:`AttemptSource`), so it runs
the same against the orchestrator and against a test stand-in.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from aka.claims import claim_next, key_state

__all__ = ["AttemptSource", "WorkerReport", "run_worker"]


class AttemptSource(Protocol):
    """Where a worker gets work from and how it runs it (the orchestrator in production)."""

    def pending(self) -> Sequence[Any]:
        """Attempt plans still to run; each has ``.key`` (unique per run) and may have ``.try_no``."""
        ...

    def execute(self, plan: Any, *, device: str, worker_id: str) -> None:
        """Run one attempt end to end, appending its events."""
        ...


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
