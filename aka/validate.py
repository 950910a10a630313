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

The checks that need no evaluator live in :mod:`aka.task_checks`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from aka import events as ev
from aka import recorder
from aka.config import ArmConfig, TimingSettings
from aka.errors import AkaError
from aka.eval import EvalRequest, evaluate
from aka.heldout import baseline_task
from aka.task_checks import Status, TaskValidation, reference_checks, static_checks
from aka.tasks import Task, load_task
from aka_ledger import Ledger

AA_BAND = {"cuda": 0.05, "cpu": 0.5}
"""A/A timing band: the baseline against itself must land within 1 ± band (geomean)."""

# -- checks through the real evaluator -------------------------------------------------------

ZEROS_WRAPPER = """

import torch as _aka_null_torch

_aka_null_original = {symbol}


def {symbol}(*args, **kwargs):
    return _aka_null_torch.zeros_like(_aka_null_original(*args, **kwargs))
"""


def _trees(ledger: Ledger, task: Task) -> dict[str, str]:
    """Candidate trees: the baseline, and (when the entry file is editable Python) zeros."""
    import shutil
    import tempfile

    spec = task.spec
    src = task.path / spec.source_dir
    present = [p for p in spec.editable if (src / p).is_file()]
    trees = {"baseline": ledger.cas.snapshot(src, paths=present)}
    if spec.entry_file in spec.editable and spec.entry_file.endswith(".py"):
        with tempfile.TemporaryDirectory(prefix="aka-null-") as tmp:
            for rel in present:
                (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src / rel, Path(tmp) / rel)
            entry = Path(tmp) / spec.entry_file
            entry.write_text(entry.read_text() + ZEROS_WRAPPER.format(symbol=spec.entry_symbol))
            trees["zeros"] = ledger.cas.snapshot(Path(tmp), paths=present)
    return trees


def _aa_noise(ledger: Ledger, run_id: str, eval_id: str, device: str) -> tuple[Status, str]:
    """The baseline timed against itself: its geomean speedup must be within the band."""
    import math

    shapes = [
        s
        for e in ledger.events(run_id=run_id, types=["KernelTimed"])
        if isinstance(e.payload, ev.KernelTimed) and e.payload.eval_id == eval_id
        for s in e.payload.shapes
    ]
    if not shapes:
        return "skip", "no timing recorded"
    geo = math.exp(sum(math.log(s.speedup) for s in shapes) / len(shapes))
    band = AA_BAND["cpu" if device == "cpu" else "cuda"]
    covered = sum(s.speedup_ci[0] <= 1.0 <= s.speedup_ci[1] for s in shapes)
    detail = (
        f"A/A speedup {geo:.3f} (band 1±{band}); CI covers 1 on {covered}/{len(shapes)} shape(s)"
    )
    if abs(math.log(geo)) <= math.log(1 + band):
        return "pass", detail
    return ("warn" if device == "cpu" else "fail"), detail


def _command_checks(task: Task, device: str, out: TaskValidation) -> None:
    """A command task: its scripts pass the starting sources, and time them A/A within the band."""
    import math
    import shutil
    import tempfile

    from aka.command_tasks import run_commands

    cmds = task.spec.commands
    assert cmds is not None
    if cmds.skip_reason:
        out.add("platform", "skip", cmds.skip_reason)
        return
    with tempfile.TemporaryDirectory(prefix="aka-validate-") as tmp:
        base, cand = Path(tmp) / "base", Path(tmp) / "cand"
        shutil.copytree(task.path, base)
        shutil.copytree(task.path, cand)
        result = run_commands(cmds, base=base, cand=cand, device=device, time=True, rounds=2)
    if not result["correct"]:
        out.add("baseline_passes", "fail", str(result["error"]))
        return
    out.add("baseline_passes", "pass", "the task's compile and correctness commands pass")
    speedups = [t["pair"]["speedup"] for t in result["timing"]]
    if not speedups:
        out.add("timing_noise", "fail", str(result["error"]))
        return
    geo = math.exp(sum(math.log(x) for x in speedups) / len(speedups))
    band = AA_BAND["cpu" if device == "cpu" else "cuda"]
    ok = abs(math.log(geo)) <= math.log(1 + band)
    detail = f"A/A speedup {geo:.3f} over {len(speedups)} case(s) (band 1±{band})"
    out.add("timing_noise", "pass" if ok else ("warn" if device == "cpu" else "fail"), detail)


def _evaluator_checks(
    ledger: Ledger,
    task: Task,
    *,
    device: str,
    run_id: str,
    timing: TimingSettings,
    out: TaskValidation,
) -> None:
    from aka.orchestrator import harness_digest

    assert out.task_tree is not None
    if task.spec.commands is not None:
        _command_checks(task, device, out)
        return
    if ("cpu" if device == "cpu" else "cuda") not in task.spec.devices:
        for name in (
            "baseline_passes",
            "timing_noise",
            "baseline_passes_heldout",
            "null_zeros_evaluated",
        ):
            out.add(
                name,
                "skip",
                f"the task runs on {task.spec.devices} only, not on {device} "
                f"(validate it with --device {task.spec.devices[0]})",
            )
        return
    harness = harness_digest(ledger)

    def run(cand: str, *, heldout: bool = False, time: bool = False) -> ev.Scored:
        req = EvalRequest(
            task=baseline_task(task) if cand == trees["baseline"] else task, task_tree=out.task_tree or "", candidate=cand, harness=harness,
            device=device, policy="agentkernelarena", timing=timing, purpose="validate",
            heldout=heldout, time=time,
        )  # fmt: skip
        scored = evaluate(ledger, run_id, None, req)
        out.eval_ids.append(scored.eval_id)
        return scored

    trees = _trees(ledger, task)
    base = run(trees["baseline"], time=True)
    if base.compiled and base.correct:
        out.add("baseline_passes", "pass", f"compiles and passes on {device} tuning shapes")
        out.add("timing_noise", *_aa_noise(ledger, run_id, base.eval_id, device))
    else:
        out.add("baseline_passes", "fail", f"compiled={base.compiled}: {base.error}")
        out.add("timing_noise", "skip", "the baseline does not pass")
    if any(c.name == "heldout_shapes" and c.status == "pass" for c in out.checks):
        held = run(trees["baseline"], heldout=True)
        ok = held.compiled and held.correct
        out.add("baseline_passes_heldout", "pass" if ok else "fail", "" if ok else str(held.error))
    else:
        out.add("baseline_passes_heldout", "skip", "no valid held-out shapes")
    if "zeros" in trees:
        null = run(trees["zeros"])
        rejected = not null.correct
        out.add(
            "null_zeros_evaluated",
            "pass" if rejected else "fail",
            "the evaluator rejects a zeros submission"
            if rejected
            else "a zeros submission scored correct",
        )
    else:
        out.add("null_zeros_evaluated", "skip", "the entry file is not editable Python")


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
    except AkaError as exc:
        out.add("schema", "fail", exc.render())
        return record_validation(ledger, run_id, device, out)
    out.add("schema", "pass", f"{task.spec.type}, backend {task.spec.backend}")
    out.task_tree = ledger.cas.snapshot(task.path)
    stages: list[tuple[str, Callable[[], None]]] = [("static", lambda: static_checks(task, out))]
    if task.spec.commands is None:
        stages.append(("reference", lambda: reference_checks(task, device, out)))
    if not quick:
        budget = timing or default_timing(device)

        def through_evaluator() -> None:
            _evaluator_checks(ledger, task, device=device, run_id=run_id, timing=budget, out=out)

        stages.append(("evaluator", through_evaluator))
    for stage, fn in stages:
        try:
            fn()
        except Exception as exc:
            out.add(f"{stage}_stage", "fail", f"{type(exc).__name__}: {exc}"[:2000])
    if review is not None:
        try:
            status, notes = review_task(task, review)
        except Exception as exc:
            status, notes = "warn", f"review failed: {type(exc).__name__}: {exc}"
        out.add(f"review:{review.agent}", status, notes, review=True)
    return record_validation(ledger, run_id, device, out)


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
