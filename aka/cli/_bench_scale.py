"""``aka bench scale``: attempts per hour against GPU count, each attempt scored once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from aka.cli._common import DEFAULT_LEDGER, LedgerOpt, OutputFormat, emit_rows
from aka.cli._groups import bench_app


def _counts(spec: str | None, most: int) -> list[int]:
    from aka.errors import InputError
    from aka_runners import default_counts

    if spec is None:
        return default_counts(most)
    try:
        return [int(c) for c in spec.split(",") if c.strip()]
    except ValueError:
        raise InputError(f"bad counts {spec!r}", where="--counts", fix="use e.g. 1,2,4") from None


@bench_app.command("scale")
def bench_scale(
    config: Annotated[Path, typer.Argument(help="Run config (tasks, arms, device, repeats).")],
    gpus: Annotated[
        str | None, typer.Option("--gpus", help="GPUs to scale over, e.g. 0,1,2,3.")
    ] = None,
    cpu: Annotated[
        int | None, typer.Option("--cpu", min=1, help="Instead of GPUs: up to N CPU workers.")
    ] = None,
    counts: Annotated[
        str | None,
        typer.Option("--counts", help="Worker counts to run, in order (default 1,2,4,..,all)."),
    ] = None,
    lease_ttl_s: Annotated[
        float | None, typer.Option("--lease-ttl", min=0.1, help="Lease TTL (default: config's).")
    ] = None,
    kill_after_s: Annotated[
        float | None,
        typer.Option(
            "--kill-after",
            min=0.0,
            help="Fault path: in the last step, SIGKILL the "
            "last worker this many seconds in; its attempt must still be scored once.",
        ),
    ] = None,
    warm_up: Annotated[
        bool,
        typer.Option(
            "--warm-up",
            help="First an unmeasured run at the largest count, so "
            "every measured step finds the same kernels compiled.",
        ),
    ] = False,
    fmt: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="table or json.", case_sensitive=False)
    ] = OutputFormat.table,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Also write the JSON report here.")
    ] = None,
    ledger: LedgerOpt = DEFAULT_LEDGER,
) -> None:
    """Run CONFIG once per worker count on the local runner; attempts per hour and utilization.

    Each step is `aka run CONFIG --gpus <first n>` (or `--workers n` with --cpu), labelled
    `<label>-x<n>`. From the ledger: attempts scored exactly once, attempts per hour (of
    the step's wall time, and of its attempts' span), the ratio to linear scaling from the
    smallest count, and per worker its attempts and utilization from the `workers` view.
    With --kill-after S the last step's last worker is killed S seconds in (the worker,
    its agent and its evaluations): the others take its attempt over once its lease
    expires. Exits 1 when an attempt of some step was not scored exactly once.
    """
    from dataclasses import asdict

    from aka.errors import InputError
    from aka_runners import ScaleStep, parse_gpus, run_scale

    if fmt is OutputFormat.csv:
        raise InputError("csv is not offered", where="--format", fix="use table or json")
    if (gpus is None) == (cpu is None):
        raise InputError(
            "give --gpus or --cpu (one of them)", where="--gpus/--cpu", fix="e.g. --gpus 0,1,2,3"
        )
    gpu_list = parse_gpus(gpus) if gpus is not None else None
    most = len(gpu_list) if gpu_list else int(cpu or 1)
    chosen = _counts(counts, most)
    if cpu is not None and any(c > cpu for c in chosen):
        raise InputError(f"a count above --cpu {cpu}", where="--counts", fix=f"use at most {cpu}")

    def line(step: ScaleStep) -> None:
        if fmt is OutputFormat.table:
            typer.echo(f"step done: {json.dumps(step.summary())}", err=True)

    steps = run_scale(ledger, config, counts=chosen, gpus=gpu_list, lease_ttl_s=lease_ttl_s,
                      kill_after_s=kill_after_s, warm_up=warm_up, on_step=line)  # fmt: skip
    report = {"config": str(config), "steps": [s.as_dict() for s in steps]}
    if output is not None:
        output.write_text(json.dumps(report, indent=2))
    if fmt is OutputFormat.json:
        typer.echo(json.dumps(report, indent=2))
    else:
        emit_rows([s.summary() for s in steps], fmt, title="scale-out: attempts per hour")
        workers = [
            {"workers": s.workers, "run_id": s.run_id, **asdict(w)}
            for s in steps
            for w in s.worker_rows
        ]
        emit_rows(workers, fmt, title="per worker (the workers view)")
    bad = [s for s in steps if not s.exactly_once]
    if bad:
        for s in bad:
            died = (
                f"; worker(s) {', '.join(s.died)} died (their errors are above)" if s.died else ""
            )
            typer.echo(
                f"error: run {s.run_id} ({s.workers} workers): {len(s.unscored)} attempt(s) "
                f"unscored {list(s.unscored)[:3]}, {len(s.scored_twice)} scored twice "
                f"{list(s.scored_twice)[:3]}{died}; `aka resume {s.run_id}` finishes it",
                err=True,
            )
        raise typer.Exit(1)
