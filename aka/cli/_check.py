"""``aka check``: score one kernel file against a task, without a config or an agent."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aka.cli._app import app
from aka.cli._common import (
    DEFAULT_LEDGER,
    FormatOpt,
    LedgerOpt,
    OutputFormat,
    echo_json,
    emit_rows,
    open_ledger,
)


@app.command()
def check(
    kernel: Annotated[Path, typer.Argument(help="The kernel source file to score.")],
    task: Annotated[str, typer.Option("--task", help="Task, e.g. triton2triton/llm/softmax.")],
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:N or auto.")] = "auto",
    tasks_root: Annotated[Path, typer.Option("--root", help="Tasks folder.")] = Path("tasks"),
    editable: Annotated[
        str | None,
        typer.Option("--as", help="Which editable file it replaces (tasks with several)."),
    ] = None,
    fmt: FormatOpt = OutputFormat.table,
    ledger: LedgerOpt = DEFAULT_LEDGER,
) -> None:
    """Score KERNEL_FILE against a task with the arena's evaluator; recorded as an attempt."""
    from aka.api import check as check_

    led = open_ledger(ledger, create=True)
    try:
        r = check_(led, kernel, task, tasks_root=tasks_root, device=device, editable=editable)
    finally:
        led.close()
    if fmt is OutputFormat.json:
        echo_json(r.to_dict())
        return
    row = {
        "task": task,
        "compiled": r.compiled,
        "correct": r.correct,
        "speedup": r.speedup,
        "score": r.reward,
        "hack_flags": ", ".join(r.hack_flags),
        "error": (r.error or "")[:200],
    }
    emit_rows([row], fmt, title=f"{kernel} on {task}")
    if fmt is OutputFormat.table:
        typer.echo(
            f"recorded as run {r.run_id}, attempt {r.attempt_key}: "
            f"`aka audit '{r.attempt_key}' --run {r.run_id}` shows the files behind it",
            err=True,
        )
