"""``aka worker``: the claim -> execute -> release loop as a command.

This is what every runner launches: local processes, Docker containers and Slurm jobs
all run ``aka worker --run RUN_ID --ledger DIR``, so a worker behaves the same wherever
it runs.
"""

from __future__ import annotations

import json
import signal
import sys
from types import FrameType
from typing import Annotated

import typer

from aka.cli._app import app
from aka.cli._common import DEFAULT_LEDGER, LedgerOpt


def _terminate(signum: int, frame: FrameType | None) -> None:
    sys.exit(128 + signum)


@app.command("worker")
def worker(
    run: Annotated[str, typer.Option("--run", help="Run id to work on.")],
    ledger: LedgerOpt = DEFAULT_LEDGER,
    device: Annotated[
        str | None,
        typer.Option(
            "--device", help="Expected device: cpu, cuda, cuda:N or auto (default: the run's)."
        ),
    ] = None,
    lease_ttl: Annotated[
        float,
        typer.Option(
            "--lease-ttl",
            min=1.0,
            help="Lease seconds; a dead worker's attempt is retried after this.",
        ),
    ] = 60.0,
    worker_id: Annotated[
        str | None,
        typer.Option("--worker-id", help="Id written into leases and events (default host-pid)."),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option("--source", hidden=True, help="module:factory of an attempt source (tests)."),
    ] = None,
) -> None:
    """Claim and execute attempts of RUN until none is pending, then print a summary."""
    from aka_runners import default_worker_id, load_source_factory, preflight, run_worker

    # SIGTERM (scancel, a Slurm time limit, `docker stop`) unwinds like an exception, so
    # the held lease is released at once instead of expiring a TTL later.
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        wid = worker_id or default_worker_id()
        src = load_source_factory(source)(ledger, run, wid)
        try:
            target = device or str(getattr(src, "target_device", "auto"))
            resolved = preflight(target)  # before any claim: a wrong node runs nothing
            report = run_worker(
                ledger, run, src, worker_id=wid, device=resolved, lease_ttl_s=lease_ttl
            )
        finally:
            close = getattr(src, "close", None)
            if close is not None:
                close()
    finally:
        signal.signal(signal.SIGTERM, previous)
    typer.echo(
        json.dumps(
            {
                "worker_id": report.worker_id,
                "executed": len(report.executed),
                "busy_s": round(report.busy_s, 3),
                "wall_s": round(report.wall_s, 3),
                "utilization": round(report.utilization, 4),
            }
        )
    )
