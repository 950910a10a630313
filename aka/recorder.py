"""The one recorder: where a run's start is recorded and where every attempt is wrapped.

``aka run`` and ``aka resume`` (through :mod:`aka.attempt`), ``aka worker``, the RL API
(:mod:`aka.api`, ``aka serve``, ``aka check``) and the trainers' reward functions all
start runs with :func:`start_run` and run each try of an attempt inside
:func:`execute_attempt`, so an attempt has the same events, the same durability (declared
by the event types, :mod:`aka.events`) and the same failure handling whoever drives it.

:func:`execute_attempt` holds the only broad ``except`` of the attempt lifecycle. A
failure becomes one ``AttemptFinished`` event, and who failed decides its status:

- ``error``: the attempt's own failure (the agent's process, its candidate's
  evaluation crashing); the try is spent and the planner retries up to ``max_tries``.
- ``task``: the task itself failed (:class:`aka.errors.TaskError`: its folder does not
  load, its reference or baseline does not run); nothing is charged to the agent, and
  the task's attempts wait until the task is fixed and the run resumed.
- ``infra``: the machine failed (a full disk, an unwritable ledger); nothing is charged,
  the run stops with :class:`aka.errors.InfrastructureError`, and ``aka resume`` runs
  the try again once the cause is fixed. If even that event cannot be written, the try
  reads as interrupted (like a killed process) and counts as spent.
"""

from __future__ import annotations

import errno
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from aka import events as ev
from aka.errors import InfrastructureError, TaskError
from aka.runkeys import create_run_key, with_authority
from aka_ledger import Ledger, LedgerError, MissingBlobError, SchemaError

__all__ = [
    "AttemptRecorder",
    "execute_attempt",
    "finish_run",
    "plan_attempts",
    "record",
    "reject_attempt",
    "start_checks",
    "start_run",
]

ERROR_CAP = 2000
"""Characters of a failure kept in ``AttemptFinished.error``."""


def start_run(
    ledger: Ledger,
    run_id: str,
    started: ev.RunStarted,
    planned: Sequence[tuple[str, ev.AttemptPlanned]] = (),
) -> None:
    """Record a run's start: its run key first, then ``RunStarted`` and its plans, as one batch.

    The key exists before anything of the run is recorded, so every outcome event the
    run appends is signed (:mod:`aka.runkeys`).

    Args:
        ledger: the ledger (given the arena's signing authority if it has none).
        run_id: the new run's id (checked by the caller: :func:`aka.runlock.check_run_id`).
        started: the run's ``RunStarted``.
        planned: ``(attempt key, AttemptPlanned)`` of every attempt known at the start;
            attempts planned later go through :func:`plan_attempts`.
    """
    with_authority(ledger)
    create_run_key(run_id)
    items: list[tuple[ev.EventModel, str, str | None]] = [(started, run_id, None)]
    items += [(p, run_id, key) for key, p in planned]
    ledger.append_many(items)


def start_checks(ledger: Ledger, run_id: str) -> None:
    """Make ``run_id`` ready to record evaluations that belong to no run's attempt.

    A task validation evaluates under a run id of its own with no ``RunStarted``; it
    gets a run key like any run, so the evaluator's outcome events in it are signed and
    a forged one is dropped on read. Safe to call again (in every validation process).
    """
    with_authority(ledger)
    create_run_key(run_id)


def record(
    ledger: Ledger, run_id: str, event: ev.EventModel, *, attempt_key: str | None = None
) -> None:
    """Append one event that belongs to no try: a validation's verdict, the link from a
    held-out evaluation to the attempt it re-evaluated."""
    ledger.append(event, run_id=run_id, attempt_key=attempt_key)


def plan_attempts(
    ledger: Ledger, run_id: str, planned: Sequence[tuple[str, ev.AttemptPlanned]]
) -> None:
    """Record attempts planned after the run started (the API plans one per candidate)."""
    ledger.append_many([(p, run_id, key) for key, p in planned])


def finish_run(ledger: Ledger, run_id: str, *, attempts: int, scored: int) -> None:
    """Record ``RunFinished``: every planned attempt has a result or has spent its tries."""
    ledger.append(ev.RunFinished(attempts=attempts, scored=scored), run_id=run_id)


class _Watched:
    """The ledger as an attempt's body sees it: every append is also kept on the recorder.

    The evaluator appends to what it is given; handing it this instead of the ledger
    lets the caller see the evaluation's events (a trainer's feedback is made from them)
    without reading the run back.
    """

    def __init__(self, ledger: Ledger, seen: list[ev.EventModel]) -> None:
        self._ledger = ledger
        self._seen = seen

    def append(self, event: ev.EventModel, **kwargs: Any) -> Any:
        env = self._ledger.append(event, **kwargs)
        self._seen.append(event)
        return env

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ledger, name)


@dataclass
class AttemptRecorder:
    """One try of one attempt: appends its events under the attempt's key.

    Attributes:
        base: the ledger appended to.
        run_id: the run.
        key: the attempt key.
        try_no: the try number.
        events: every event appended through this recorder, in order.
    """

    base: Ledger
    run_id: str
    key: str
    try_no: int
    events: list[ev.EventModel] = field(default_factory=list)

    @property
    def ledger(self) -> Ledger:
        """The ledger as the try's body hands it on: what is appended through it (by the
        evaluator, say) is kept in :attr:`events` too."""
        return cast(Ledger, _Watched(self.base, self.events))

    def emit(self, event: ev.EventModel) -> None:
        """Append one event of this attempt (durable when its type says so)."""
        self.base.append(event, run_id=self.run_id, attempt_key=self.key)
        self.events.append(event)


Body = Callable[[AttemptRecorder], ev.Scored]
"""A try's work: appends through the recorder, returns the final ``Scored``."""


def execute_attempt(
    ledger: Ledger,
    run_id: str,
    key: str,
    try_no: int,
    *,
    worker: str,
    body: Body,
    recorder: AttemptRecorder | None = None,
    reraise: bool = False,
) -> ev.Scored | None:
    """Run one try of an attempt between ``AttemptStarted`` and ``AttemptFinished``.

    Args:
        ledger: the ledger.
        run_id: the run.
        key: the attempt key.
        try_no: the try number.
        worker: who runs it (``AttemptStarted.worker``).
        body: the try's work; it appends through the recorder it is given.
        recorder: the recorder to use (the caller keeps it to read ``events``).
        reraise: raise the body's failure again once it is recorded (a library caller
            tells its own caller); a run's loop leaves it False and goes on.

    Returns:
        The final ``Scored``, or None when the try failed and was recorded as an
        ``error`` or ``task`` finish (see the module's docstring).

    Raises:
        InfrastructureError: the ledger or the disk could not be written; the try is
            recorded as ``infra`` when that is still possible, and is not spent.
    """
    rec = recorder or AttemptRecorder(ledger, run_id, key, try_no)
    rec.emit(ev.AttemptStarted(try_no=try_no, worker=worker))
    try:
        scored = body(rec)
    except Exception as exc:  # the attempt boundary: any failure becomes one event
        if _infrastructure(exc):
            recorded = _finish_quietly(rec, _one_line(exc))
            raise InfrastructureError(
                f"run {run_id!r} stopped at attempt {key} (try {try_no}): the ledger or the "
                f"disk could not be written ({_one_line(exc)}); nothing was charged to the "
                "agent" + ("" if recorded else " (the stop itself could not be recorded)"),
                where=str(ledger.root or "ledger"),
                fix=f"free space (or make the ledger writable), then `aka resume {run_id}`",
            ) from exc
        if isinstance(exc, TaskError):
            finished = ev.AttemptFinished(
                try_no=try_no, status="task", error=exc.render()[:ERROR_CAP]
            )
        else:
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            finished = ev.AttemptFinished(try_no=try_no, status="error", error=detail[:ERROR_CAP])
        rec.emit(finished)
        if reraise:
            raise
        return None
    rec.emit(ev.AttemptFinished(try_no=try_no, status="scored"))
    return scored


def reject_attempt(
    ledger: Ledger,
    run_id: str,
    key: str,
    try_no: int,
    *,
    worker: str,
    error: str,
    body: Callable[[AttemptRecorder], None] | None = None,
) -> AttemptRecorder:
    """Record a try that ended before there was anything to run (a response that never
    became a candidate): started, what ``body`` records, finished as ``error``."""
    rec = AttemptRecorder(ledger, run_id, key, try_no)
    rec.emit(ev.AttemptStarted(try_no=try_no, worker=worker))
    if body is not None:
        body(rec)
    rec.emit(ev.AttemptFinished(try_no=try_no, status="error", error=error[:ERROR_CAP]))
    return rec


def _finish_quietly(rec: AttemptRecorder, why: str) -> bool:
    """Record the try as stopped by the machine, if the machine still lets us: on a full
    disk, the ledger's reserve is given up for this record."""
    stop = ev.AttemptFinished(try_no=rec.try_no, status="infra", error=why[:ERROR_CAP])
    try:
        rec.emit(stop)
    except Exception:  # the disk that failed the try may fail this too
        try:
            if not rec.ledger.release_reserve():
                return False
            rec.emit(stop)
        except Exception:
            return False
    return True


_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}


def _infrastructure(exc: BaseException) -> bool:
    """Whether a failure is the machine's (the ledger unwritable, a full disk)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, TaskError):
            return False
        if isinstance(cur, InfrastructureError):
            return True
        if isinstance(cur, LedgerError) and not isinstance(cur, SchemaError | MissingBlobError):
            return True
        if isinstance(cur, OSError) and cur.errno in _FULL:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def _one_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
