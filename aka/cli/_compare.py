"""``aka compare`` and ``aka export rewards``: thin wrappers over :mod:`aka.stats`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from aka.cli._app import app
from aka.cli._common import DEFAULT_LEDGER, FormatOpt, LedgerOpt, OutputFormat, open_ledger
from aka.cli._groups import export_app
from aka_ledger import Ledger


def _resolve_ref(ledger: Ledger, ref: str) -> str:
    """Expand a run prefix or label in ``RUN`` or ``RUN/ARM`` to the full run id."""
    from aka.errors import NotFoundError
    from aka.report import resolve_run

    run, slash, arm = ref.rpartition("/")
    head = run if slash else ref
    try:
        rid = resolve_run(ledger, head)
    except NotFoundError:
        return ref  # an arm name; aka.stats resolves (or rejects) it
    return f"{rid}/{arm}" if slash else rid


@app.command()
def compare(
    a: Annotated[str, typer.Argument(help="Side A: RUN, RUN/ARM, or an arm name.")],
    b: Annotated[str, typer.Argument(help="Side B: RUN, RUN/ARM, or an arm name.")],
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Compare even if task sets, harness, policy or device differ."
        ),
    ] = False,
    alpha: Annotated[float, typer.Option(help="Significance level.")] = 0.05,
    fmt: FormatOpt = OutputFormat.table,
    ledger: LedgerOpt = DEFAULT_LEDGER,
) -> None:
    """Paired A/B comparison per task with bootstrap CIs, tests and a verdict."""
    from aka.stats import compare as compare_
    from aka.stats import render_table, select_attempts
    from aka.tables import attempt_table
    from aka.treatments import arm_difference

    led = open_ledger(ledger)
    table = attempt_table(led, turns=False)
    ra, rb = _resolve_ref(led, a), _resolve_ref(led, b)
    side_a, side_b = select_attempts(table, ra), select_attempts(table, rb)
    result = compare_(side_a, side_b, labels=(a, b), force=force, alpha=alpha)
    arm_names = side_b["arm"].unique().to_list()
    arms = arm_difference(
        led.cas,
        side_a["arm_digest"].to_list(),
        side_b["arm_digest"].to_list(),
        label=arm_names[0] if len(arm_names) == 1 else b,
    )
    if fmt is OutputFormat.json:
        typer.echo(json.dumps({**result.to_dict(), "arms": arms}, indent=2))
    else:
        for w in result.warnings:
            typer.echo(f"WARNING: {w}", err=True)
        typer.echo(render_table(result))
        typer.echo(f"arms: {arms['summary']}")


@export_app.command("rewards")
def rewards(
    runs: Annotated[list[str], typer.Argument(help="Run ids (or prefixes/labels).")],
    out: Annotated[Path, typer.Option("--out", help="Parquet file to write.")],
    fmt: Annotated[str, typer.Option("--format", help="verl, skyrl, trl or raw.")] = "verl",
    policy: Annotated[
        str,
        typer.Option(
            "--policy",
            help="Reward policy, e.g. agentkernelarena, log_speedup:floor=0.25, fast_p:thresholds=1.0/1.5.",
        ),
    ] = "agentkernelarena",
    ledger: LedgerOpt = DEFAULT_LEDGER,
) -> None:
    """Reward table for RL trainers, reshaped from stored components (no GPU)."""
    from aka.errors import InputError
    from aka.report import resolve_run
    from aka.stats import EXPORT_FORMATS, export_rewards
    from aka.tables import attempt_table

    if fmt not in EXPORT_FORMATS:
        raise InputError(
            f"unknown export format {fmt!r}",
            where="--format",
            fix=f"use one of {', '.join(EXPORT_FORMATS)}",
        )
    led = open_ledger(ledger)
    run_ids = [resolve_run(led, r) for r in runs]
    table = attempt_table(led, run_ids)
    path = export_rewards(table, out, format=fmt, policy=policy)  # type: ignore[arg-type]
    typer.echo(f"wrote {table.height} rows to {path}")
