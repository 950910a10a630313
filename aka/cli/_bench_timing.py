"""``aka bench timing``: A/A noise, sensitivity and reference harnesses on this machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from aka.cli._common import OutputFormat
from aka.cli._groups import bench_app


@bench_app.command("timing")
def bench_timing(
    fmt: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="table or json.", case_sensitive=False)
    ] = OutputFormat.table,
    device: Annotated[str, typer.Option("--device", help="cuda, cuda:N or cpu.")] = "cuda",
    processes: Annotated[int, typer.Option("--processes", min=1, help="Fresh processes.")] = 5,
    rounds: Annotated[int, typer.Option("--rounds", min=1, help="Rounds per process.")] = 10,
    budget_s: Annotated[
        float, typer.Option("--budget-s", min=1.0, help="Wall budget for all processes.")
    ] = 600.0,
    max_time_s: Annotated[
        float, typer.Option("--max-time-s", min=0.01, help="Engine time budget per pair.")
    ] = 2.0,
    comparators: Annotated[
        bool,
        typer.Option(
            "--comparators/--no-comparators", help="Also time with do_bench and a KernelBench loop."
        ),
    ] = True,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Also write the JSON report here.")
    ] = None,
) -> None:
    """Time kernels against themselves (A/A) and against 10 %-slower variants.

    Each of PROCESSES fresh processes runs ROUNDS rounds over six kernels from ~3 µs to
    ~3 ms; the report gives the p95 A/A ratio per kernel for the engine, do_bench and a
    KernelBench-style loop, the share of engine CIs excluding 1, the detection rate of
    the slower variants and the engine's own overhead. Same as
    ``python -m aka.timing.bench`` (which needs no CLI dependencies).
    """
    from aka.errors import InputError
    from aka.timing import render_bench_report
    from aka.timing.bench import run_bench

    if fmt is OutputFormat.csv:
        raise InputError("csv is not offered", where="--format", fix="use table or json")
    report = run_bench(
        device=device,
        processes=processes,
        rounds=rounds,
        comparators=comparators and device != "cpu",
        budget_s=budget_s,
        max_time_s=max_time_s,
        raw_path=output.with_suffix(".raw.json") if output else None,
    )
    text = json.dumps(report, indent=2)
    if output is not None:
        output.write_text(text)
    typer.echo(text if fmt is OutputFormat.json else render_bench_report(report))
