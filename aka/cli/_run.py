"""``aka run`` and ``aka resume``: drive a run (inline or through a runner) with its progress."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from aka import events as ev
from aka.cli._app import app
from aka.cli._common import (
    DEFAULT_LEDGER,
    LedgerOpt,
    open_ledger,
)
from aka.config import RunnerSettings
from aka.core import AttemptPlan
from aka.orchestrator import open_run
from aka_ledger import Ledger


def _outcome(scored: ev.Scored | None) -> str:
    if scored is None:
        return "error (infrastructure; retried on resume)"
    state = "correct" if scored.correct else "compiled, wrong" if scored.compiled else "failed"
    speed = f", speedup {scored.speedup:.3f}x" if scored.speedup is not None else ""
    return f"score {scored.score:.1f} ({state}{speed})"


class _Bar:
    """A rich progress bar: the attempt running now, and how many are done."""

    def __init__(self, progress: Progress):
        self.progress = progress
        self.task_id: TaskID | None = None
        self.last = ""

    def _update(self, completed: int, total: int, description: str) -> None:
        if self.task_id is None:
            self.task_id = self.progress.add_task("attempts", total=total)
        self.progress.update(
            self.task_id, completed=completed, total=total, description=description
        )

    def started(self, p: AttemptPlan, i: int, total: int) -> None:
        last = f"  (last: {self.last})" if self.last else ""
        self._update(i - 1, total, escape(f"running {p.task} [{p.arm}] #{p.repeat}{last}"))

    def __call__(self, p: AttemptPlan, scored: ev.Scored | None, i: int, total: int) -> None:
        self.last = f"{p.task} [{p.arm}] {_outcome(scored)}"
        self._update(i, total, f"done {escape(self.last)}")


class _Lines:
    """One flushed line per attempt started and finished: for logs, pipes and CI."""

    def started(self, p: AttemptPlan, i: int, total: int) -> None:
        typer.echo(f"[{i}/{total}] started {p.task} [{p.arm}] repeat {p.repeat}")
        sys.stdout.flush()

    def __call__(self, p: AttemptPlan, scored: ev.Scored | None, i: int, total: int) -> None:
        typer.echo(
            f"[{i}/{total}] finished {p.task} [{p.arm}] repeat {p.repeat}: {_outcome(scored)}"
        )
        sys.stdout.flush()


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=False,
    )


def _drive_inline(led: Ledger, rid: str) -> None:
    """Drive the run here, with a bar on a terminal and a line per event elsewhere."""
    from aka.orchestrator import drive

    if not sys.stdout.isatty():
        lines = _Lines()
        drive(led, rid, progress=lines, on_start=lines.started)
        return
    with _progress() as progress:
        bar = _Bar(progress)
        drive(led, rid, progress=bar, on_start=bar.started)


RunnerOpt = Annotated[
    str | None, typer.Option("--runner", help="inline (this process), local, docker or slurm.")
]
GpusOpt = Annotated[str | None, typer.Option("--gpus", help="One worker per GPU, e.g. 0,1,2,3.")]
WorkersOpt = Annotated[int | None, typer.Option("--workers", help="CPU workers (no GPUs).")]


def _overrides(runner: str | None, gpus: str | None, workers: int | None) -> dict[str, object]:
    out: dict[str, object] = {}
    if runner is not None:
        out["kind"] = runner
    if gpus is not None:
        from aka_runners import parse_gpus

        out["gpus"] = parse_gpus(gpus)
        out.setdefault("kind", "local")
    if workers is not None:
        out["workers"] = workers
        out.setdefault("kind", "local")
    return out


def _execute(led: Ledger, ledger_dir: Path, rid: str, settings: RunnerSettings) -> None:
    """Run a run's pending attempts inline or through workers, then close it."""
    from aka.liveness import holding
    from aka.orchestrator import finish_if_complete

    if settings.kind == "inline":
        _drive_inline(led, rid)
        return
    from aka_runners import DockerSpec, SlurmSpec, launch

    docker = slurm = None
    if settings.docker is not None:
        d = settings.docker
        docker = DockerSpec(image=d.image, mounts=d.mounts, env=d.env, network_mode=d.network_mode)
    if settings.slurm is not None:
        s = settings.slurm.model_dump()
        s["setup"] = "\n".join(s["setup"])
        slurm = SlurmSpec(**s)
    with holding(led.root, rid):
        result = launch(
            rid,
            ledger_dir,
            runner=settings.kind,
            gpus=settings.gpus or None,
            workers=settings.workers,
            lease_ttl_s=settings.lease_ttl_s,
            docker=docker,
            slurm=slurm,
        )
    for summary in result.summaries:
        if summary:
            typer.echo(json.dumps(summary))
    cfg = open_run(led, rid).config
    finish_if_complete(led, rid, max_tries=cfg.max_tries)


@app.command()
def run(
    config: Annotated[Path, typer.Argument(help="Run config (YAML).")],
    label: Annotated[str | None, typer.Option(help="Override the config's label.")] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Use this run id.")] = None,
    runner: RunnerOpt = None,
    gpus: GpusOpt = None,
    workers: WorkersOpt = None,
    warm_workers: Annotated[
        bool | None,
        typer.Option(
            "--warm-workers/--cold-workers",
            help="Evaluation processes forked warm (the default) or each a fresh interpreter; "
            "overrides the config's evaluator.warm_workers and is recorded with the run.",
        ),
    ] = None,
    ledger: LedgerOpt = DEFAULT_LEDGER,
) -> None:
    """Run every task with every arm; each step becomes an event in the ledger."""
    from aka.orchestrator import started_run

    led = open_ledger(ledger, create=True)
    over = _overrides(runner, gpus, workers)

    def dropped(key: str, why: str) -> None:
        typer.echo(f"dropped {key}: {why}", err=True)

    with started_run(
        led, config, label=label, run_id=run_id, runner=over, warm_workers=warm_workers,
        on_drop=dropped,
    ) as (rid, cfg):  # fmt: skip
        _execute(led, ledger, rid, cfg.runner)
    led.close()
    typer.echo(f"run {rid} finished; `aka report {rid}` shows the results")


@app.command()
def resume(
    run_id: Annotated[str | None, typer.Argument(help="Run id (or a unique prefix).")] = None,
    latest: Annotated[bool, typer.Option("--latest", help="Resume the most recent run.")] = False,
    runner: RunnerOpt = None,
    gpus: GpusOpt = None,
    workers: WorkersOpt = None,
    ledger: LedgerOpt = DEFAULT_LEDGER,
) -> None:
    """Finish a run: read → fold → plan → the same loop as `aka run`."""
    from aka.errors import InputError
    from aka.orchestrator import run_state
    from aka.report import resolve_run
    from aka.runlock import hold_run
    from aka.treatments import check_runner

    if (run_id is None) == (not latest):
        raise InputError("give a RUN_ID or --latest (not both)", fix="e.g. `aka resume --latest`")
    led = open_ledger(ledger)
    rid = resolve_run(led, None if latest else run_id)
    config = open_run(led, rid).config
    settings = config.runner
    over = _overrides(runner, gpus, workers)
    if over:
        settings = RunnerSettings.model_validate({**settings.model_dump(), **over})
        check_runner(config, settings.kind, where="--runner")
    with hold_run(led, rid):
        _execute(led, ledger, rid, settings)
    state = run_state(led, rid)
    led.close()
    n = sum(1 for a in state.attempts.values() if a.score is not None)
    typer.echo(f"run {rid}: {n}/{len(state.attempts)} attempts scored")
