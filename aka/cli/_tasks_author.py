"""``aka tasks validate``, ``aka tasks new`` and ``aka tasks import {kernelbench,aka}``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from aka.cli._common import (
    DEFAULT_LEDGER,
    FormatOpt,
    LedgerOpt,
    OutputFormat,
    emit_rows,
    open_ledger,
)
from aka.cli._groups import tasks_app
from aka.errors import AkaError, InputError

if TYPE_CHECKING:
    from collections.abc import Callable

    from aka.config import ArmConfig
    from aka.importers import ImportResult, Outcome
    from aka.kinds import TaskValidation

RootOpt = Annotated[Path, typer.Option("--root", help="Tasks folder.", envvar="AKA_TASKS")]
import_app = typer.Typer(help="Import tasks from other formats.", no_args_is_help=True)
tasks_app.add_typer(import_app, name="import")


class ValidationFailed(AkaError):
    """At least one task failed a deterministic check (exit 1)."""

    exit_code = 1


def _review_arm(agent: str | None, arm_file: Path | None) -> ArmConfig | None:
    import yaml
    from pydantic import ValidationError

    from aka.config import ArmConfig, format_errors

    if arm_file is None:
        return ArmConfig(name="review", agent=agent) if agent else None
    try:
        raw = yaml.safe_load(arm_file.read_text())
        arm = ArmConfig.model_validate({"name": "review", **(raw or {})})
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(str(exc), where=str(arm_file), fix="pass a readable YAML arm") from None
    except ValidationError as exc:
        raise InputError(
            format_errors(exc), where=str(arm_file), fix="see docs/agents.md"
        ) from None
    return arm.model_copy(update={"agent": agent}) if agent else arm


def _show_one(res: TaskValidation) -> None:
    """A finished task: PASS/FAIL, then every check that did not pass, with its detail."""
    typer.echo(f"{'PASS' if res.ok else 'FAIL'}  {res.key}")
    for c in res.checks:
        if c.status != "pass":
            label = ("review: " if c.review else "") + c.name
            typer.echo(f"  {c.status:<4}  {label}: {c.detail}")


@tasks_app.command("validate")
def validate(
    selector: Annotated[list[str] | None, typer.Argument(help="Task paths under the root.")] = None,
    root: RootOpt = Path("tasks"),
    device: Annotated[str, typer.Option("--device", help="cpu, cuda, cuda:N or auto.")] = "auto",
    ledger: LedgerOpt = DEFAULT_LEDGER,
    review: Annotated[
        str | None, typer.Option("--review", help="Also ask this agent for its opinion.")
    ] = None,
    review_arm: Annotated[
        Path | None,
        typer.Option("--review-arm", help="YAML arm (agent, model, options) for the review."),
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Static and reference checks only (no evaluator).")
    ] = False,
    memory_gb: Annotated[
        float | None,
        typer.Option(
            "--memory-gb",
            help="Data-segment cap per task's process (default 16 on cpu, none on cuda; 0: none).",
        ),
    ] = None,
    task_timeout: Annotated[
        float, typer.Option("--task-timeout", help="Seconds one task's validation may take.")
    ] = 1800.0,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            min=1,
            help="Tasks validated at once: they time one at a time (one timing gate), a task "
            "starts on a GPU only while a quarter of its memory is free, and each failure is "
            "validated again alone.",
        ),
    ] = 1,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Deterministic checks of task folders (no model needed); exit 1 if any task fails.

    Spec schema, files, targets, tunables, forbidden names, reference determinism and
    seed/input dependence, null answers, and through the evaluator on DEVICE: baseline
    passes, A/A timing noise, held-out shapes. Each task runs in its own process under
    a memory cap, and its result is printed as soon as it finishes. With ``--jobs N``, N
    tasks are validated at once, sharing one timing gate, and each one that fails is
    validated again alone (the others' compiles and memory can still fail it); its result
    alone is the one shown. Results are TaskValidated events.
    """
    from aka.orchestrator import resolve_device
    from aka.validate import new_validation_id, task_folders
    from aka.validate_isolated import DEFAULT_MEMORY_GB, Validated, validate_many

    arm = _review_arm(review, review_arm)
    dev = resolve_device(device)
    cap = DEFAULT_MEMORY_GB["cpu" if dev == "cpu" else "cuda"] if memory_gb is None else memory_gb
    folders = task_folders(root, selector or [])
    rid = new_validation_id()

    def show(done: Validated) -> None:
        if fmt is OutputFormat.table:
            _show_one(done.result)
            if done.under_load is not None:
                typer.echo(f"  (validated again alone after failing with {jobs} at once)")

    def retry(done: Validated) -> None:
        if fmt is OutputFormat.table:
            failed = ", ".join(c.name for c in done.result.checks if c.status == "fail")
            typer.echo(f"....  {done.result.key}: failed with {jobs} at once ({failed}); "
                       "validating it again alone once the others are done")  # fmt: skip

    with open_ledger(ledger, create=True) as led:
        found = validate_many(
            led, ledger, folders, jobs=jobs, on_result=show, on_retry=retry, root=root, device=dev,
            run_id=rid, quick=quick, review=arm, memory_gb=cap or None, timeout_s=task_timeout,
        )  # fmt: skip
    results = [done.result for done in found]
    if fmt is OutputFormat.json:
        doc = [
            {"task": r.key, "ok": r.ok, "checks": [c.model_dump() for c in r.checks]}
            for r in results
        ]
        typer.echo(json.dumps({"validation": rid, "device": dev, "tasks": doc}, indent=2))
    elif fmt is not OutputFormat.table:
        rows: list[dict[str, object]] = [
            {
                "task": r.key,
                "check": ("review: " if c.review else "") + c.name,
                "status": c.status,
                "detail": c.detail,
            }
            for r in results
            for c in r.checks
        ]
        emit_rows(rows, fmt, title=f"validation {rid} on {dev}")
    failed = [r.key for r in results if not r.ok]
    if failed:
        raise ValidationFailed(f"{len(failed)} of {len(results)} task(s) failed: {failed}")


@tasks_app.command("new")
def new(
    name: Annotated[str, typer.Argument(help="Task name (a slug: a-z, 0-9, _).")],
    kind: Annotated[
        str,
        typer.Option(
            "--type",
            help="triton2triton, torch2triton, instruction2triton, cuda2cuda or torch2cuda.",
        ),
    ] = "torch2triton",
    root: RootOpt = Path("tasks"),
    suite: Annotated[str, typer.Option("--suite", help="Folder between type and name.")] = "new",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing folder.")] = False,
) -> None:
    """Scaffold a task folder from a template (valid as written; edit it into your op)."""
    from aka.importers import scaffold_task

    dest = scaffold_task(name, kind, root, suite=suite, force=force)
    key = dest.relative_to(root).as_posix()
    typer.echo(f"wrote {dest}\nnext: aka tasks validate {key} --root {root}")


def _printer(root: Path) -> Callable[[Outcome], None]:
    """Print one line per upstream file or folder as it is decided."""

    def show(outcome: Outcome) -> None:
        typer.echo(outcome.line(root), err=outcome.status == "refused")

    return show


def _report(result: ImportResult, root: Path) -> None:
    """Counts per status; an error when nothing was imported."""
    counts = {
        s: sum(o.status == s for o in result.outcomes)
        for s in ("imported", "imported GPU-only", "refused")
    }
    typer.echo(", ".join(f"{n} {s}" for s, n in counts.items()))
    if not result.written:
        raise InputError("nothing was imported", fix="see the refused files above")


ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite existing task folders.")]


@import_app.command("kernelbench")
def import_kernelbench_cmd(
    path: Annotated[Path, typer.Argument(help="A KernelBench problem file or a folder of them.")],
    root: RootOpt = Path("tasks"),
    kind: Annotated[
        str, typer.Option("--type", help="torch2triton or torch2cuda.")
    ] = "torch2triton",
    suite: Annotated[
        str, typer.Option("--suite", help="Folder between type and name.")
    ] = "kernelbench",
    force: ForceOpt = False,
    upstream_sizes: Annotated[
        bool,
        typer.Option(
            "--upstream-sizes",
            help="Tune at the file's sizes however large (default: shrink problems over "
            "2^28 elements in all until they fit).",
        ),
    ] = False,
) -> None:
    """KernelBench problems (class Model, get_inputs, get_init_inputs) become tasks."""
    from aka.importers import import_kernelbench

    result = import_kernelbench(
        path, root, kind=kind, suite=suite, force=force, upstream_sizes=upstream_sizes,
        on_outcome=_printer(root),
    )  # fmt: skip
    _report(result, root)


@import_app.command("aka")
def import_aka_cmd(
    path: Annotated[
        Path, typer.Argument(help="An AgentKernelArena task folder or a folder of them.")
    ],
    root: RootOpt = Path("tasks"),
    suite: Annotated[
        str, typer.Option("--suite", help="Folder between type and name.")
    ] = "agentkernelarena",
    platform: Annotated[
        str | None,
        typer.Option(
            "--platform",
            help="Platform to check support against (sm_90, gfx942, cpu); default: this machine.",
        ),
    ] = None,
    force: ForceOpt = False,
) -> None:
    """AgentKernelArena task folders become command-driven tasks (their own scripts judge)."""
    from aka.importers import import_agentkernelarena

    result = import_agentkernelarena(
        path, root, suite=suite, force=force, platform=platform, on_outcome=_printer(root)
    )
    _report(result, root)
