"""Sub-command groups, created once so several modules can add commands to each."""

from __future__ import annotations

import typer

from aka.cli._app import app

ledger_app = typer.Typer(help="Inspect and maintain the ledger.", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks: ledger, timing, eval, schedule.", no_args_is_help=True)
tasks_app = typer.Typer(
    help="List, show, validate, scaffold and import tasks.", no_args_is_help=True
)
agents_app = typer.Typer(help="List and check agents.", no_args_is_help=True)
export_app = typer.Typer(help="Export tables for other tools (RL trainers).", no_args_is_help=True)

app.add_typer(ledger_app, name="ledger")
app.add_typer(bench_app, name="bench")
app.add_typer(tasks_app, name="tasks")
app.add_typer(agents_app, name="agents")
app.add_typer(export_app, name="export")
