"""Typed errors of the arena core.

Errors are raised as values that know what went wrong, where, and how to fix it; the
CLI turns them into a message and an exit code at one boundary (``aka.cli``), so no
command prints a traceback for bad input.
"""

from __future__ import annotations


class AkaError(Exception):
    """Base of every error the CLI reports as a message rather than a traceback.

    Attributes:
        exit_code: 2 for bad input (config, task folder, arguments), 1 for a failed
            check (verification found problems), other codes where a command says so.
    """

    exit_code: int = 1

    def __init__(self, message: str, *, where: str | None = None, fix: str | None = None):
        self.message = message
        self.where = where
        self.fix = fix
        super().__init__(self.render())

    def render(self) -> str:
        """One human-readable message: where, what, and the fix."""
        head = f"{self.where}: {self.message}" if self.where else self.message
        return f"{head}\n  fix: {self.fix}" if self.fix else head


class InputError(AkaError):
    """Bad user input: a config, a task folder, a CLI argument. Exit code 2."""

    exit_code = 2


class NotFoundError(InputError):
    """A named thing (run, attempt, task, agent) does not exist. Exit code 2."""


class InfrastructureError(AkaError):
    """The machine failed, not the input or the agent: a full disk, an unwritable ledger.

    Raised at the attempt boundary instead of recording the try as the agent's error, so
    no score and no further try is spent on it; the run stops and ``aka resume`` goes on
    once the cause is fixed. Exit code 3.
    """

    exit_code = 3


class TaskError(InfrastructureError):
    """The task itself failed, not the agent: its folder does not load, or its reference or
    baseline does not run.

    Recorded at the attempt boundary as ``AttemptFinished(status="task")``: no score and
    no try is charged, the task's other attempts wait, and ``aka resume`` runs them once
    the task folder is fixed. Exit code 3.
    """
