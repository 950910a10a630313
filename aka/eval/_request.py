"""What an evaluation is asked: the request every task kind lays out and judges.

It sits below both the recording evaluator (:mod:`aka.eval._evaluate`) and the task
kinds (:mod:`aka.kinds`), which judge it, so neither imports the other's module.
"""

from __future__ import annotations

from dataclasses import dataclass

from aka import events as ev
from aka.config import TimingSettings
from aka.tasks import Task

__all__ = ["EvalRequest"]


@dataclass(frozen=True)
class EvalRequest:
    """What to evaluate and how; everything is a digest or a value."""

    task: Task
    task_tree: str
    candidate: str
    harness: str
    device: str
    policy: str
    timing: TimingSettings
    purpose: ev.Purpose = "final"
    try_no: int = 0
    turn: int = 0
    heldout: bool = False
    checks_heldout: bool | None = None
    """Whether the held-out shapes are checked (never timed) with the tuning ones; None:
    in a scored evaluation (purpose ``final``) of the tuning shapes."""
    time: bool = True
    seed: int | None = None
    ceilings: dict[str, float] | None = None
    hide: tuple[str, ...] = ()
    """Folders the candidate must not see besides the ledger and the staged task's suite:
    the task suite the task was staged from (a staged copy no longer lies inside it)."""

    @property
    def with_heldout(self) -> bool:
        """Whether :attr:`checks_heldout` holds for this request."""
        if self.heldout:
            return False
        return self.purpose == "final" if self.checks_heldout is None else self.checks_heldout
