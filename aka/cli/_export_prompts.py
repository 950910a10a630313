"""``aka export prompts``: prompt datasets for RL trainers (verl, SkyRL, TRL)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aka.cli._common import DEFAULT_LEDGER, LedgerOpt, open_ledger
from aka.cli._groups import export_app


@export_app.command("prompts")
def prompts(
    out: Annotated[Path, typer.Option("--out", help="Parquet file to write.")],
    tasks: Annotated[
        list[str] | None, typer.Option("--tasks", help="Task selectors (repeatable); default all.")
    ] = None,
    root: Annotated[Path, typer.Option("--root", help="Tasks folder.")] = Path("tasks"),
    fmt: Annotated[str, typer.Option("--format", help="verl, skyrl or trl.")] = "verl",
    device: Annotated[str, typer.Option(help="Device the prompts describe: cpu or cuda.")] = "cuda",
    repeat: Annotated[int, typer.Option(help="Rows per task.")] = 1,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", help="Turns per SkyRL episode (extra_info).")
    ] = None,
    ledger: LedgerOpt = DEFAULT_LEDGER,
) -> None:
    """Prompt rows for RL trainers, each naming its task and task digest (docs/trainers.md)."""
    from aka.errors import InputError
    from aka.integrations import PROMPT_FORMATS, export_prompts

    if fmt not in PROMPT_FORMATS:
        raise InputError(
            f"unknown prompt format {fmt!r}",
            where="--format",
            fix=f"use one of {', '.join(PROMPT_FORMATS)}",
        )
    led = open_ledger(ledger, create=True)
    try:
        path, skipped = export_prompts(
            root,
            tasks or ["."],
            out,
            format=fmt,  # type: ignore[arg-type]
            device=device,
            ledger=led,
            repeat=repeat,
            max_turns=max_turns,
        )
    finally:
        led.close()
    for key, why in skipped.items():
        typer.echo(f"skipped {key}: {why}", err=True)
    typer.echo(f"wrote prompts to {path}")
