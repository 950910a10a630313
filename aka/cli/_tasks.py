"""``aka tasks list`` and ``aka tasks show``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aka.cli._common import FormatOpt, OutputFormat, emit_rows
from aka.cli._groups import tasks_app

RootOpt = Annotated[Path, typer.Option("--root", help="Tasks folder.", envvar="AKA_TASKS")]


@tasks_app.command("list")
def list_(
    selector: Annotated[
        list[str] | None, typer.Argument(help="Selectors (folders under the root).")
    ] = None,
    root: RootOpt = Path("tasks"),
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Every task (or those under SELECTOR), one row each."""
    from aka.tasks import discover, select

    tasks = select(root, selector) if selector else discover(root)
    rows = [
        {
            "task": t.key,
            "type": t.spec.type,
            "backend": t.spec.backend,
            "devices": ",".join(t.spec.devices),
            "dtypes": ",".join(t.spec.dtypes),
            "shapes": len(t.spec.shapes.tuning),
            "heldout": len(t.spec.shapes.heldout),
        }
        for t in tasks
    ]
    emit_rows(rows, fmt, title=f"{len(rows)} tasks under {root}")


@tasks_app.command()
def show(
    task: Annotated[str, typer.Argument(help="Task path under the root.")],
    root: RootOpt = Path("tasks"),
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """A task's full spec."""
    import json

    import yaml

    from aka.tasks import select

    (t,) = select(root, [task])[:1]
    data = {"key": t.key, **t.spec.model_dump(mode="json")}
    typer.echo(
        json.dumps(data, indent=2)
        if fmt is OutputFormat.json
        else yaml.safe_dump(data, sort_keys=False)
    )
