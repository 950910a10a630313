"""Options shared by every command, so each flag means the same thing everywhere."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer

from aka_ledger import Ledger, Rejected

LedgerOpt = Annotated[
    Path,
    typer.Option(
        "--ledger",
        envvar="AKA_LEDGER",
        help="Ledger directory (also AKA_LEDGER).",
        show_default=True,
    ),
]
DEFAULT_LEDGER = Path(".aka")


class OutputFormat(enum.StrEnum):
    """Output formats shared by every read command."""

    table = "table"
    json = "json"
    csv = "csv"


FormatOpt = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="Output format.", case_sensitive=False)
]


def open_ledger(path: Path, *, create: bool = False) -> Ledger:
    """Open the ledger at ``path`` with the arena's event types registered.

    Raises:
        NotFoundError: ``create`` is False and there is no ledger there.
    """
    from aka.errors import NotFoundError
    from aka.events import REGISTRY
    from aka_ledger import Ledger

    if not create and not path.is_dir():
        raise NotFoundError(
            "no ledger here",
            where=str(path),
            fix="pass --ledger DIR (or set AKA_LEDGER), or run `aka run` first",
        )
    from aka.runkeys import arena_authority

    authority = arena_authority(sign=True, on_reject=warn_rejected)
    return Ledger.open(path, registry=REGISTRY, create=create, authority=authority)


_warned: set[str] = set()


def warn_rejected(rejected: list[Rejected]) -> None:
    """Say once per process that forged or unauthenticated outcome events were ignored."""
    new = [r for r in rejected if r.event_id not in _warned]
    if not new:
        return
    _warned.update(r.event_id for r in new)
    first = new[0]
    typer.echo(
        f"warning: ignored {len(new)} event(s) not authenticated by their run's key "
        f"(first: {first.type} of run {first.run_id} by writer {first.writer_id} in "
        f"{first.source}); `aka ledger verify` names them",
        err=True,
    )


def emit_rows(
    rows: list[dict[str, object]], fmt: OutputFormat, *, title: str | None = None
) -> None:
    """Print rows as a rich table, JSON or CSV: the one renderer every read command uses."""
    import csv
    import json
    import sys

    if fmt is OutputFormat.json:
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    if fmt is OutputFormat.csv:
        if rows:
            writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for col in rows[0] if rows else []:
        table.add_column(str(col), overflow="fold")
    for row in rows:
        table.add_row(
            *(
                "" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v)
                for v in row.values()
            )
        )
    Console(width=200).print(table)
