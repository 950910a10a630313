"""The typer application and the single error boundary of the CLI.

Command groups live in their own modules (``_run.py``, ``_ledger.py``, ...) and register
themselves on :data:`app` or on a sub-application when imported by :func:`_load`.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated

import typer

from aka.errors import AkaError

app = typer.Typer(
    name="aka",
    help="aka: an arena where AI agents optimize GPU kernels, on an event-sourced ledger.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from aka import __version__

        typer.echo(f"aka {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print aka's version and exit."
        ),
    ] = False,
) -> None:
    """aka: an arena where AI agents optimize GPU kernels, on an event-sourced ledger."""


# Each module below adds its commands to `app`; order is the order in `aka --help`.
COMMAND_MODULES: tuple[str, ...] = (
    "aka.cli._groups",
    "aka.cli._agents",
    "aka.cli._run",
    "aka.cli._report",
    "aka.cli._tasks",
    "aka.cli._eval",
    "aka.cli._check",
    "aka.cli._compare",
    "aka.cli._export_prompts",
    "aka.cli._serve",
    "aka.cli._dashboard",
    "aka.cli._worker",
    "aka.cli._bench_schedule",
    "aka.cli._bench_scale",
    "aka.cli._bench_timing",
    "aka.cli._bench_eval",
    "aka.cli._bench_agree",
    "aka.cli._ledger",
    "aka.cli._heldout",
    "aka.cli._tasks_author",
)


def _load() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(name)


def _domain_error_types() -> tuple[type[BaseException], ...]:
    types: list[type[BaseException]] = [AkaError]
    try:
        from aka_ledger import LedgerError

        types.append(LedgerError)
    except ImportError:  # the ledger is always installed; this guards partial checkouts
        pass
    return tuple(types)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning domain errors into a message and an exit code.

    Usage errors are click's (exit 2); domain errors are ours, rendered once here.
    """
    _load()
    errors = _domain_error_types()
    try:
        app(args=argv)
    except errors as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(getattr(exc, "exit_code", 1))
