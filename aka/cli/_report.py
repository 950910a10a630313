"""``aka report``, ``aka status`` and ``aka audit``: reading what a run recorded.

Apart from the commands that drive a run (:mod:`aka.cli._run`): these only read the
ledger (and a worker's leases, to tell a running run from an interrupted one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aka.cli._app import app
from aka.cli._common import (
    DEFAULT_LEDGER,
    FormatOpt,
    LedgerOpt,
    OutputFormat,
    WideOpt,
    echo_json,
    emit_rows,
    open_ledger,
)
from aka_ledger import Ledger

REPORT_COLUMNS = ("task", "arm", "repeat", "correct", "speedup", "score", "self_evals", "error")
"""What ``aka report`` shows in a terminal; ``--wide`` adds the rest."""
STATUS_COLUMNS = ("run_id", "label", "status", "scored", "attempts", "resume")
"""What ``aka status`` shows in a terminal; ``--wide`` adds the rest."""


@app.command()
def report(
    run: Annotated[
        str | None, typer.Argument(help="Run id, prefix or label (default: latest).")
    ] = None,
    fmt: FormatOpt = OutputFormat.table,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Write the run's views as one self-contained HTML page."),
    ] = None,
    wide: WideOpt = False,
    ledger: LedgerOpt = DEFAULT_LEDGER,
) -> None:
    """One row per attempt: compiled, correct, speedup, score, candidate digest, error."""
    from aka.report import attempt_rows, resolve_run

    led = open_ledger(ledger)
    rid = resolve_run(led, run)
    if html is not None:
        from aka.dashboard import render_static_report

        html.write_text(render_static_report(led, rid), encoding="utf-8")
        typer.echo(f"wrote {html}")
        return
    rows = attempt_rows(led, rid)
    if fmt is OutputFormat.table:
        for r in rows:
            r["candidate"] = (r["candidate"] or "")[:15]
            if "arm_digest" in r:
                r["arm_digest"] = (r["arm_digest"] or "")[:15]
            r["error"] = (r["error"] or "")[:60]
            r.pop("attempt_key")
    emit_rows(rows, fmt, title=f"run {rid}", columns=REPORT_COLUMNS, wide=wide)


def _leased(led: Ledger, run_id: str) -> bool:
    """Whether a worker holds a live claim on one of the run's unscored attempts."""
    import time

    from aka.report import connect
    from aka_runners import read_leases

    if led.root is None:
        return True
    keys = connect(led).execute(
        "SELECT attempt_key FROM attempts WHERE run_id = ? AND attempt_key NOT IN "
        "(SELECT attempt_key FROM scores WHERE run_id = ?)",
        [run_id, run_id],
    )
    now = time.time()
    for (key,) in keys.fetchall():
        leases = read_leases(led.root, run_id, key)
        if leases and leases[-1].live(now):
            return True
    return False


def run_statuses(led: Ledger) -> list[dict[str, object]]:
    """Every run's row, a killed one marked ``interrupted`` with the command resuming it.

    A run without ``RunFinished`` is running only while some process drives it (its
    lock, :mod:`aka.liveness`) or a worker holds a live claim on one of its attempts.
    """
    from aka.liveness import is_driven
    from aka.report import run_rows

    rows = run_rows(led)
    for r in rows:
        rid = str(r["run_id"])
        live = r["status"] != "running" or is_driven(led.root, rid) or _leased(led, rid)
        if not live:
            r["status"] = "interrupted"
        r["resume"] = "" if live else f"aka resume {rid}"
    return rows


@app.command()
def status(
    run: Annotated[str | None, typer.Argument(help="Run id (default: every run).")] = None,
    fmt: FormatOpt = OutputFormat.table,
    wide: WideOpt = False,
    ledger: LedgerOpt = DEFAULT_LEDGER,
) -> None:
    """Runs with their progress (scored / planned); a killed run reads as interrupted."""
    from aka.report import resolve_run

    led = open_ledger(ledger)
    rows = run_statuses(led)
    if run is not None:
        rid = resolve_run(led, run)
        rows = [r for r in rows if r["run_id"] == rid]
    emit_rows(rows, fmt, title="runs", columns=STATUS_COLUMNS, wide=wide)
    stopped = [r for r in rows if r["status"] == "interrupted"]
    if stopped and fmt is OutputFormat.table:
        typer.echo(
            f"{len(stopped)} run(s) interrupted (no process drives them); "
            f"`{stopped[-1]['resume']}` continues the latest",
            err=True,
        )


@app.command()
def audit(
    attempt: Annotated[
        str, typer.Argument(help="Attempt key (from `aka report --format json`) or eval id.")
    ],
    run: Annotated[str | None, typer.Option("--run", help="Run the attempt belongs to.")] = None,
    diff: Annotated[bool, typer.Option("--diff", help="Print the candidate's diff.")] = False,
    export: Annotated[
        Path | None, typer.Option("--export", help="Write the candidate files here.")
    ] = None,
    fmt: FormatOpt = OutputFormat.table,
    ledger: LedgerOpt = DEFAULT_LEDGER,
) -> None:
    """The exact files behind a score, each re-hashed against the content store."""
    from aka.audit import audit as audit_
    from aka.audit import export_candidate
    from aka.report import resolve_run

    led = open_ledger(ledger)
    rid = resolve_run(led, run) if run else None
    a = audit_(led, attempt, run_id=rid)
    s = a.score
    rows = [
        {
            "role": f.role,
            "path": f.path,
            "digest": f.digest,
            "bytes": f.size,
            "verified": f.verified,
        }
        for f in a.files
    ]
    if export is not None:
        export_candidate(led, a, export)
    if fmt is OutputFormat.json:
        echo_json(
            {
                "run_id": a.run_id,
                "attempt_key": a.attempt_key,
                "score": s.model_dump(mode="json"),
                "evaluation": a.evaluation.model_dump(mode="json"),
                "files": rows,
                "ok": a.ok,
                **({"diff": a.diff} if diff else {}),
            }
        )
    else:
        head = fmt is not OutputFormat.table  # CSV on stdout holds the rows alone
        typer.echo(
            f"run {a.run_id} attempt {a.attempt_key}: score {s.score:.2f} ({s.policy} v{s.policy_version}), compiled={s.compiled} correct={s.correct} speedup={s.speedup}",
            err=head,
        )
        typer.echo(
            f"candidate {a.evaluation.candidate}  task {a.evaluation.task}  harness {a.evaluation.harness}  device {a.evaluation.device}",
            err=head,
        )
        emit_rows(rows, fmt, title="files behind the score")
        if diff:
            typer.echo(a.diff or "(no changes)")
    if export is not None:
        typer.echo(f"candidate written to {export}", err=fmt is not OutputFormat.table)
    if not a.ok:
        typer.echo("error: some files do not match their digests", err=True)
        raise typer.Exit(1)
