"""``aka heldout RUN``: re-evaluate a run's candidates and baselines on held-out shapes."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated

import typer

from aka.cli._app import app
from aka.cli._common import (
    DEFAULT_LEDGER,
    FormatOpt,
    LedgerOpt,
    OutputFormat,
    emit_rows,
    open_ledger,
)


def _ci(ci: tuple[float, float] | None) -> str:
    return "" if ci is None else f"[{ci[0]:.3g}, {ci[1]:.3g}]"


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.3g}"


@app.command("heldout")
def heldout(
    run: Annotated[str, typer.Argument(help="Run id, unique prefix, label, or 'latest'.")],
    ledger: LedgerOpt = DEFAULT_LEDGER,
    force: Annotated[
        bool, typer.Option("--force", help="Evaluate again even where results are recorded.")
    ] = False,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Re-evaluate each attempt's final candidate and each task's baseline on held-out shapes.

    Results are recorded as events (purpose 'heldout', never an attempt's score) and
    reused on the next call. The report: one row per attempt with its quadrant, then
    per arm P(candidate correct | baseline correct), speedups on tuning and held-out
    shapes with 95 % bootstrap CIs over tasks, and the generalization gap.
    """
    from aka.heldout import run_heldout, summarize
    from aka.report import resolve_run

    with open_ledger(ledger) as led:
        rid = resolve_run(led, run)
        rows = run_heldout(led, rid, force=force)
    arms = summarize(rows)
    if fmt is OutputFormat.json:
        doc = {
            "run_id": rid,
            "attempts": [{**asdict(r), "quadrant": r.quadrant} for r in rows],
            "arms": [asdict(a) for a in arms],
        }
        typer.echo(json.dumps(doc, indent=2))
        return
    attempt_rows: list[dict[str, object]] = [
        {
            "task": r.task,
            "arm": r.arm,
            "tuning_ok": r.tuning_correct,
            "heldout_ok": r.heldout_correct,
            "baseline_ok": r.baseline_correct,
            "quadrant": r.quadrant,
            "tuning_speedup": r.tuning_speedup,
            "heldout_speedup": r.heldout_speedup,
            "error": (r.error or "")[:80],
        }
        for r in rows
    ]
    emit_rows(attempt_rows, fmt, title=f"held-out: {rid}")
    arm_rows: list[dict[str, object]] = [
        {
            "arm": a.arm,
            "attempts": a.attempts,
            **a.quadrants,
            "P(cand|base)": _num(a.conditional_correctness),
            "tuning_speedup": f"{_num(a.tuning_speedup)} {_ci(a.tuning_ci)}",
            "heldout_speedup": f"{_num(a.heldout_speedup)} {_ci(a.heldout_ci)}",
            "gap": f"{_num(a.gap)} {_ci(a.gap_ci)}",
        }
        for a in arms
    ]
    emit_rows(arm_rows, fmt, title="per arm (speedups: geometric means, 95% CI over tasks)")
