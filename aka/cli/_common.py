"""Options shared by every command, so each flag means the same thing everywhere."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from aka_ledger import Ledger, Rejected

T = TypeVar("T")

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


WideOpt = Annotated[
    bool, typer.Option("--wide", help="Show every column (tables fit the terminal otherwise).")
]


def json_ready(value: object) -> object:
    """``value`` with NaN and infinities as None, so ``json.dumps`` writes valid JSON."""
    import math

    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def echo_json(value: object) -> None:
    """Print ``value`` as JSON on stdout: the only thing a ``--format json`` command prints."""
    import json

    typer.echo(json.dumps(json_ready(value), indent=2, default=str, allow_nan=False))


def emit_rows(
    rows: list[dict[str, object]],
    fmt: OutputFormat,
    *,
    title: str | None = None,
    columns: Sequence[str] | None = None,
    wide: bool = False,
) -> None:
    """Print rows as a rich table, JSON or CSV: the one renderer every read command uses.

    Args:
        rows: the rows, every one with the same keys.
        fmt: table, json or csv. JSON and CSV always carry every key.
        title: the table's title.
        columns: the keys a table shows on a terminal unless ``wide`` (None: all). The
            table then fits the terminal's width, and a line on stderr says what was left
            out and how to see it.
        wide: show every column.
    """
    import csv
    import sys

    if fmt is OutputFormat.json:
        echo_json(rows)
        return
    if fmt is OutputFormat.csv:
        if rows:
            writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    terminal = sys.stdout.isatty()
    keys = list(rows[0]) if rows else list(columns or [])
    hidden: list[str] = []
    if columns is not None and not wide and terminal:
        hidden = [k for k in keys if k not in columns]
        keys = [k for k in keys if k in columns]
    table = Table(title=title, show_lines=False)
    for col in keys:
        table.add_column(str(col), overflow="fold")
    for row in rows:
        table.add_row(
            *(
                Text("" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v))
                for v in (row[k] for k in keys)
            )
        )
    Console(width=None if terminal else 200).print(table)
    if hidden:
        typer.echo(
            f"({len(hidden)} more column(s): {', '.join(hidden)}; --wide shows them, "
            "--format json has every field)",
            err=True,
        )


DASHBOARD_PORT = 8765
"""``aka dashboard``'s default port."""
SERVE_PORT = 8766
"""``aka serve``'s default port: another one, so both can run side by side."""


def bind(make: Callable[[], T], *, host: str, port: int, command: str) -> T:
    """Call ``make`` (which binds ``host:port``); a port in use becomes a one-line error.

    Raises:
        InputError: the address is taken (or cannot be bound), naming the fix.
    """
    import errno

    from aka.errors import InputError

    try:
        return make()
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise InputError(
                f"port {port} on {host} is already in use (another `aka {command}`?)",
                where="--port",
                fix=f"stop the other server, or pass --port N (--port 0 picks a free one); "
                f"aka dashboard defaults to {DASHBOARD_PORT}, aka serve to {SERVE_PORT}",
            ) from None
        raise InputError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            where="--host/--port",
            fix="use an address of this machine (127.0.0.1 stays local) and a free port",
        ) from None
