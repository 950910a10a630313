"""``aka bench schedule``: greedy claiming against the makespan lower bound, and claim latency."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from aka.cli._common import OutputFormat, emit_rows
from aka.cli._groups import bench_app


@bench_app.command("schedule")
def bench_schedule(
    fmt: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="Output format.", case_sensitive=False)
    ] = OutputFormat.table,
    attempts: Annotated[int, typer.Option("--attempts", min=1, help="Simulated attempts.")] = 1000,
    workers: Annotated[
        str, typer.Option("--workers", help="Comma-separated worker counts to simulate.")
    ] = "8,64",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the synthetic durations.")] = 0,
    processes: Annotated[
        str, typer.Option("--processes", help="Comma-separated process counts for claim latency.")
    ] = "1,8",
    claims: Annotated[int, typer.Option("--claims", min=1, help="Keys per latency run.")] = 800,
    tmp_dir: Annotated[
        Path | None, typer.Option("--dir", help="Where to measure claims (default: system temp).")
    ] = None,
) -> None:
    """Simulate ATTEMPTS over each worker count; measure claim latency with real processes.

    The simulation charges every claim the measured p50 latency of the largest process
    count, so the makespan includes the claiming overhead.
    """
    from aka.errors import InputError
    from aka_runners import measure_claim_latency, simulate, synthetic_attempts

    try:
        counts = [int(w) for w in workers.split(",")]
        procs = [int(p) for p in processes.split(",")]
    except ValueError as exc:
        raise InputError(str(exc), where="--workers/--processes", fix="use e.g. 8,64") from exc
    latency = [measure_claim_latency(p, claims, root=tmp_dir) for p in procs]
    claim_s = latency[-1].p50_ms / 1000
    sims = synthetic_attempts(attempts, seed=seed)
    results = [
        simulate(sims, w, order=o, claim_s=claim_s)
        for w in counts
        for o in ("longest-first", "planned")
    ]
    if fmt is OutputFormat.json:
        typer.echo(
            json.dumps(
                {
                    "simulation": [r.as_dict() for r in results],
                    "claim_latency": [lat.as_dict() for lat in latency],
                },
                indent=2,
            )
        )
        return
    emit_rows([r.as_dict() for r in results], fmt, title="schedule: makespan vs lower bound")
    emit_rows([lat.as_dict() for lat in latency], fmt, title="claim latency (real processes)")
