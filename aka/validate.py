"""Task validation: deterministic checks that a task folder is sound before agents see it.

A task that a null answer can pass poisons every reward computed on it, so each task is
checked, without any model, for: a valid spec whose files exist; target symbols that
exist in the editable files; tunables that name module-level constants; forbidden names
that resolve (a typo forbids nothing); a deterministic reference whose output depends on
the seed and on every input; null answers (zeros, empty, garbage, a copy of an input, a
bfloat16-rounded answer on float32) that fail the tolerance; and, through the real
evaluator on the chosen device, a baseline that compiles and passes on the tuning and
held-out shapes, a zeros submission that the evaluator rejects, and an A/A timing of the
baseline against itself whose speedup stays within a noise band. An optional review by
an agent adds its opinion as a separate check labelled ``review`` that never decides
``ok``. Every result is a :class:`aka.events.TaskValidated` event.

Which checks apply is the task kind's (:meth:`aka.kinds.TaskKind.checks`; the kernel
kind's are above, a command task's scripts must pass the starting sources and time them
A/A). They run on the task as ``aka run`` stages it (:func:`aka.kinds.staged`): a
repository task is checked out, an image task seeded, and ``task_tree`` is the tree a
run would record.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from aka import events as ev
from aka import recorder
from aka.config import ArmConfig, TimingSettings
from aka.errors import AkaError
from aka.eval import EvalRequest, evaluate
from aka.kinds import CheckContext, Judge, Stage, Status, TaskValidation, kind_of, staged
from aka.tasks import Task, baseline_task, load_task
from aka_ledger import Ledger


def _judge(
    ledger: Ledger, task: Task, tree: str, *, device: str, run_id: str, timing: TimingSettings,
    out: TaskValidation, hide: tuple[str, ...],
) -> Judge:  # fmt: skip
    """Evaluate candidates of the staged ``task`` through the real evaluator, as ``aka run``.

    The harness digest is taken at the first evaluation (quick validation needs none).
    """
    from aka.orchestrator import harness_digest

    harness: list[str] = []

    def judge(
        candidate: str, *, baseline: bool, heldout: bool = False, time: bool = False
    ) -> ev.Scored:
        harness[:] = harness or [harness_digest(ledger)]
        req = EvalRequest(
            task=baseline_task(task) if baseline else task, task_tree=tree, candidate=candidate,
            harness=harness[0], device=device, policy="agentkernelarena", timing=timing,
            purpose="validate", heldout=heldout, time=time, hide=hide,
        )  # fmt: skip
        scored = evaluate(ledger, run_id, None, req)
        out.eval_ids.append(scored.eval_id)
        return scored

    return judge


# -- review by an agent (an opinion, never a deterministic check) ----------------------------

REVIEW_FILE = "review.json"
REVIEW_PROMPT = """You are reviewing a GPU kernel task folder (this directory) before agents are
asked to solve it. Read task.yaml, the reference module and the starting sources. Judge
whether a wrong or trivial kernel could pass (null outputs, tolerances too loose, inputs
that make the output constant), whether the instructions are clear and match the
reference, and whether the held-out shapes test generalization.

Write your verdict to {review_file} in this directory as JSON:
{{"verdict": "pass" or "fail", "notes": "one paragraph"}}
Do not edit any other file.
"""


class _Quiet:
    def emit(self, item: object) -> None:
        """Reviews are not recorded item by item; the verdict is the result."""


def review_task(task: Task, arm: ArmConfig) -> tuple[Status, str]:
    """Ask an agent (any adapter) for its opinion of ``task``; returns (status, notes)."""
    import json
    import shutil
    import tempfile

    from aka.agent import AgentRequest, AgentSettings, check_options, get_agent

    agent = get_agent(arm.agent, where="--review")
    check_options(arm.agent, arm.options, where=f"--review: arm {arm.name!r}")
    with tempfile.TemporaryDirectory(prefix="aka-review-") as tmp:
        ws = Path(tmp) / "task"
        shutil.copytree(task.path, ws)
        request = AgentRequest(
            workspace=ws,
            prompt=REVIEW_PROMPT.format(review_file=REVIEW_FILE),
            settings=AgentSettings(
                model=arm.model,
                effort=arm.effort,
                timeout_seconds=arm.timeout_seconds,
                options=dict(arm.options),
            ),
            task_name=task.name,
        )
        outcome = agent.run(request, _Quiet())
        verdict = ws / REVIEW_FILE
        if not verdict.is_file():
            return "warn", f"the agent wrote no {REVIEW_FILE} (status {outcome.status})"
        try:
            doc = json.loads(verdict.read_text())
            status = "pass" if doc["verdict"] == "pass" else "fail"
            return status, str(doc.get("notes", ""))[:2000]
        except (ValueError, KeyError, TypeError):
            return "warn", f"{REVIEW_FILE} is not {{'verdict': 'pass'|'fail', 'notes': ...}}"


# -- driver ----------------------------------------------------------------------------------


def new_validation_id() -> str:
    """The run id validation events are recorded under."""
    import secrets

    return f"validate-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"


def default_timing(device: str) -> TimingSettings:
    """A short budget on the CPU (speed is not measured there), the default on a GPU."""
    return TimingSettings(max_time_s=0.2, min_samples=5) if device == "cpu" else TimingSettings()


def validate_task(
    ledger: Ledger,
    folder: Path,
    *,
    root: Path | None,
    device: str,
    run_id: str,
    timing: TimingSettings | None = None,
    review: ArmConfig | None = None,
    quick: bool = False,
) -> TaskValidation:
    """Run every check on one task folder and record a ``TaskValidated`` event.

    ``quick`` leaves out the checks that go through the evaluator (a few child
    processes per task), keeping the static and reference checks.

    A stage that crashes (a reference that raises, a broken import) is a failed check
    naming the stage, never an exception out of here.
    """
    key = folder.resolve().relative_to(root.resolve()).as_posix() if root else folder.name
    out = TaskValidation(key=key)
    recorder.start_checks(ledger, run_id)
    try:
        task = load_task(folder, root=root)
        kind = kind_of(task)
    except AkaError as exc:
        out.add("schema", "fail", exc.render())
        return record_validation(ledger, run_id, device, out)
    out.add("schema", "pass", f"{task.spec.type}, {kind.name} kind, backend {task.spec.backend}")
    try:
        with staged(ledger.cas, task) as (staged_task, tree):
            out.task_tree = tree
            judge = _judge(ledger, staged_task, tree, device=device, run_id=run_id,
                           timing=timing or default_timing(device), out=out,
                           hide=(str((root or folder.parent).resolve()),))  # fmt: skip
            ctx = CheckContext(task=staged_task, tree=tree, device=device, out=out,
                               ledger=ledger, run_id=run_id, judge=judge, quick=quick)  # fmt: skip
            _run_stages(kind.checks(ctx), out)
    except AkaError as exc:  # the sources could not be fetched, or do not fit the spec
        out.add("staging", "fail", exc.render())
    if review is not None:
        try:
            status, notes = review_task(task, review)
        except Exception as exc:
            status, notes = "warn", f"review failed: {type(exc).__name__}: {exc}"
        out.add(f"review:{review.agent}", status, notes, review=True)
    return record_validation(ledger, run_id, device, out)


def _run_stages(stages: list[Stage], out: TaskValidation) -> None:
    """Run each stage; a crash is a failed ``<stage>_stage`` check, never an exception."""
    for stage, fn in stages:
        try:
            fn()
        except Exception as exc:
            out.add(f"{stage}_stage", "fail", f"{type(exc).__name__}: {exc}"[:2000])


def record_validation(
    ledger: Ledger, run_id: str, device: str, out: TaskValidation
) -> TaskValidation:
    """Append ``out`` as a ``TaskValidated`` event and return it."""
    recorder.record(
        ledger,
        run_id,
        ev.TaskValidated(
            task=out.key,
            task_tree=out.task_tree,
            device=device,
            ok=out.ok,
            checks=out.checks,
            eval_ids=out.eval_ids,
        ),
    )
    return out


def task_folders(root: Path, selectors: list[str]) -> list[Path]:
    """Folders holding a task.yaml under the selectors (all under ``root`` when none).

    Folders are found without loading the spec, so a broken spec is reported as a
    failed ``schema`` check rather than stopping the whole validation.
    """
    from aka.errors import InputError
    from aka.tasks import TASK_FILE

    targets = [root / s for s in selectors] or [root]
    found: list[Path] = []
    for target in targets:
        if not target.exists():
            raise InputError(
                f"task selector {target} does not exist",
                fix=f"use a path relative to {root}; `aka tasks list` shows them",
            )
        found += [p.parent for p in sorted(target.rglob(TASK_FILE))]
    if not found:
        raise InputError(f"no task.yaml under {targets}", fix="check --root and the selectors")
    return sorted(set(found))
