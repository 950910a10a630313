"""``aka eval``: score the current workspace with the arena's evaluator (self-evaluation)."""

from __future__ import annotations

import json

import typer

from aka.cli._app import app
from aka.cli._common import FormatOpt, OutputFormat, emit_rows


@app.command("eval")
def eval_(fmt: FormatOpt = OutputFormat.table) -> None:
    """Inside an attempt's workspace: compile, check and time the current files.

    The result is recorded as a self-evaluation (never the attempt's score).
    """
    from aka.selfeval import request_eval

    result = request_eval()
    if fmt is OutputFormat.json:
        typer.echo(json.dumps(result))
    else:
        emit_rows([result], fmt, title="self-evaluation")
