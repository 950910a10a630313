"""Whether a task works by itself: its baseline, judged as a candidate, passes.

A candidate that fails may have failed by the agent's doing or by the task's: a
reference that raises, inputs that cannot be made, starting sources that do not
compile or run. Before a failed final evaluation becomes an attempt's score, the task's
own starting sources are evaluated as a candidate (once per task tree and device in a
process, and only after a failure, so a passing candidate costs nothing). If they fail
too, the task is broken: a :class:`aka.errors.TaskError`, recorded by the attempt's
boundary as a task failure, never as the agent's score.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from aka import events as ev
from aka.errors import TaskError
from aka.eval import EvalRequest, evaluate
from aka.tasks import VARIANT_PREFIX, Task, baseline_task
from aka_ledger import Ledger

__all__ = ["TaskHealth"]


def starting_tree(ledger: Ledger, task: Task) -> str:
    """Tree digest of the task's starting editable files (the baseline as a candidate)."""
    src = task.path / task.spec.source_dir
    present = [p for p in task.spec.editable if (src / p).is_file()]
    with tempfile.TemporaryDirectory(prefix="aka-base-") as tmp:
        for rel in present:
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / rel, Path(tmp) / rel)
        return ledger.cas.snapshot(Path(tmp), paths=present)


class TaskHealth:
    """Asks, when a candidate fails, whether the task's own baseline fails as well.

    The baseline's evaluation is recorded like any other (purpose ``validate``, under the
    run, outside every attempt), so the evidence behind a task failure is in the ledger.
    Safe from several threads (evaluations in flight, :mod:`aka.inflight`): failures of
    one task at once wait for one evaluation of its baseline.
    """

    def __init__(self, ledger: Ledger, run_id: str) -> None:
        self._ledger = ledger
        self._run_id = run_id
        self._known: dict[tuple[str, str, bool], str | None] = {}
        self._locks: dict[tuple[str, str, bool], threading.Lock] = {}
        self._lock = threading.Lock()

    def fault(self, req: EvalRequest) -> str | None:
        """Why ``req``'s task fails by itself, or None when its baseline passes."""
        key = (req.task_tree, req.device, req.with_heldout)
        with self._lock:
            once = self._locks.setdefault(key, threading.Lock())
        with once:
            return self._fault(req, key)

    def _fault(self, req: EvalRequest, key: tuple[str, str, bool]) -> str | None:
        if key not in self._known:
            base = replace(
                req,
                task=baseline_task(req.task),
                candidate=starting_tree(self._ledger, req.task),
                purpose="validate",
                try_no=0,
                turn=0,
                heldout=False,
                checks_heldout=req.with_heldout,  # judged as the candidate was
                time=False,
            )
            scored = evaluate(self._ledger, self._run_id, None, base)
            ok = scored.compiled and scored.correct
            self._known[key] = None if ok else (scored.error or "it does not pass")
        return self._known[key]

    def vet(self, req: EvalRequest, task_key: str) -> Callable[[ev.Scored], None]:
        """A check for :func:`aka.eval.evaluate`: a failed candidate of a broken task is
        not scored; a :class:`TaskError` naming the task's file and the fix is raised."""

        def check(scored: ev.Scored) -> None:
            if scored.compiled and scored.correct:
                return
            if req.task.spec.commands is not None:
                # Command, repository and image tasks lay their baseline out by kind; the
                # starting tree built here is a kernel task's, so they are not asked.
                return
            why = self.fault(req)
            if why is None:
                return
            spec = req.task.spec
            entry = f"{spec.source_dir}/{spec.entry_file}"
            culprit = (
                spec.reference
                if spec.reference in why
                else entry
                if spec.entry_file in why
                else "task.yaml"
            )
            fix = f"fix the task (`aka tasks validate {task_key}` shows what fails), then "
            if f"'{VARIANT_PREFIX}" in why:  # an input variant: an imported task's stress case
                culprit = "task.yaml"
                fix = (
                    f"the failing case is an input variant (a held-out shape with an "
                    f"`{VARIANT_PREFIX}` key, an imported task's stress case) its own code does "
                    "not meet on this device: remove that shape from task.yaml's held-out "
                    "shapes (or lower its values: INPUT_STRESS, INPUT_NEGATE or INPUT_SHIFT in "
                    f"{spec.reference}), then "
                )
            raise TaskError(
                f"task {task_key} fails by itself: its starting sources, judged as a "
                f"candidate, fail ({why.strip()[:1000]}); the candidate was not scored and "
                "nothing was charged to the agent",
                where=f"{task_key}/{culprit}",
                fix=f"{fix}`aka resume {self._run_id}`",
            )

        return check
