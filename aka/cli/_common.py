"""Options shared by every command, so each flag means the same thing everywhere."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer

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
