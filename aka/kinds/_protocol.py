"""The task-kind protocol: what every kind of task does, and what validation collects.

A task kind (kernel, command, repository, image) is one object with four duties: lay
out the task's full tree (what a run stores, so every path judges the same bytes), lay
out one evaluation's directories from digests, judge the candidate there, and name its
own validation checks. :mod:`aka.kinds._registry` picks the kind of a task; nothing else
branches on what kind a task is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from aka import events as ev

if TYPE_CHECKING:
    from aka.eval import EvalRequest, Verdict
    from aka.tasks import Task
    from aka_ledger import Ledger

__all__ = ["FIXES", "CheckContext", "Stage", "Status", "TaskKind", "TaskValidation"]

Status = str  # "pass" | "fail" | "skip" | "warn"
Stage = tuple[str, Callable[[], None]]
"""A named validation stage: a crash inside it is a failed ``<name>_stage`` check."""

_TOLERANCE_FIX = (
    "tighten `tolerances`, or make make_inputs vary so the reference output is not "
    "near zero or constant"
)
FIXES: dict[str, str] = {
    "schema": "correct task.yaml as the message says (docs/tasks.md)",
    "staging": "correct the field the message names; `aka run` stages the task the same way",
    "targets_exist": "define each `targets` symbol in the editable files, or correct `targets`",
    "tunables": "make each tunable a module-level int of the entry file with a listed value",
    "forbidden_resolve": "correct the names in `forbidden` (each must import)",
    "heldout_shapes": "add shapes.heldout (and shapes.cpu_heldout for the CPU) with the "
    "tuning shapes' size names and values no tuning shape has",
    "reference_deterministic": "make the reference deterministic (no unseeded randomness)",
    "output_depends_on_seed": "make make_inputs draw every input from its seed argument",
    "null_zeros": _TOLERANCE_FIX,
    "null_empty": _TOLERANCE_FIX,
    "null_garbage": _TOLERANCE_FIX,
    "null_input_copy": _TOLERANCE_FIX,
    "precision_downgrade": "tighten the float32 tolerance below bfloat16 rounding (~4e-3 relative)",
    "baseline_passes": "make the starting sources pass on this device; `aka eval` on the "
    "baseline shows the full error",
    "timing_noise": "use shapes that run well above the timer's resolution, or a longer "
    "timing.max_time_s",
    "baseline_passes_heldout": "make the starting sources handle the held-out shapes, or "
    "correct the held-out shapes",
    "null_zeros_evaluated": "make the reference output depend on the inputs so zeros fail",
    "commands": "set compile, correctness and performance commands (docs/authoring.md)",
}
"""The fix each failed check names (a failure message always says what to do)."""
STAGE_FIX = "run `aka tasks validate TASK` on this task alone and fix the file the error names"


@dataclass
class TaskValidation:
    """Every check of one task; ``ok`` ignores review checks and warnings."""

    key: str
    checks: list[ev.CheckResult] = field(default_factory=list)
    task_tree: str | None = None
    eval_ids: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No deterministic check failed."""
        return not any(c.status == "fail" and not c.review for c in self.checks)

    def add(
        self, name: str, status: Status, detail: str = "", *, review: bool = False, fix: str = ""
    ) -> None:
        """Record one check; a failure's detail ends with its fix (``fix`` or :data:`FIXES`)."""
        if status == "fail" and not review and "(fix: " not in detail:
            fix = fix or FIXES.get(name) or (STAGE_FIX if name.endswith("_stage") else "")
            detail = f"{detail} (fix: {fix})" if fix else detail
        self.checks.append(
            ev.CheckResult(name=name, status=status, detail=detail, review=review)  # type: ignore[arg-type]
        )


class Judge(Protocol):
    """Evaluate a candidate tree of the staged task through the real evaluator."""

    def __call__(
        self, candidate: str, *, baseline: bool, heldout: bool = False, time: bool = False
    ) -> ev.Scored: ...


@dataclass
class CheckContext:
    """What a kind's validation checks get: the staged task and a way to judge candidates.

    ``task`` is loaded from the staged tree (``tree``), the one ``aka run`` would
    record; ``judge`` records each evaluation under the validation's run id.
    """

    task: Task
    tree: str
    device: str
    out: TaskValidation
    ledger: Ledger
    run_id: str
    judge: Judge
    quick: bool = False
    """Leave out the checks that go through the evaluator."""


class TaskKind(Protocol):
    """One kind of task: how it is staged, laid out, judged and checked."""

    name: str
    """The value of a task's ``kind`` (and what its default derivation yields)."""

    def stage(self, task: Task, dest: Path) -> None:
        """Lay out ``task``'s full tree in ``dest`` (fetching sources when the kind has them
        elsewhere); the run stores this tree.

        Raises:
            InputError: the sources cannot be fetched, naming the field and the fix.
        """
        ...

    def lay_out(self, ledger: Ledger, req: EvalRequest, dest: Path) -> dict[str, Path]:
        """``task/``, ``base/`` and ``cand/`` under ``dest``, from digests alone."""
        ...

    def judge(self, ledger: Ledger, req: EvalRequest, dest: Path, *, seed: int) -> Verdict:
        """Run the candidate laid out in ``dest``; what it did, as a verdict."""
        ...

    def checks(self, ctx: CheckContext) -> list[Stage]:
        """The kind's own validation stages, in order (``ctx.quick``: no evaluator)."""
        ...
