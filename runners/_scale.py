"""The scale-out benchmark: one run per worker count, attempts per hour against the count.

Each step is what ``aka run CONFIG --gpus 0,..,n-1`` does (or ``--workers n`` on a CPU
machine): the run is recorded, the local runner starts one worker per GPU, and the run
is closed once its workers exit. Everything reported is read back from the ledger, not
from the workers' own summaries, so a step also checks what a user's report would show:
every planned attempt scored exactly once (none lost to a worker, none scored by two),
and each worker's busy share from the ``workers`` view.

Throughput is compared with the smallest count's: ``ratio_to_linear`` is 1.0 when n
workers finish n times as many attempts per hour, below 1.0 when claiming, a shared
resource (CPU, disk, PCIe) or the longest attempt holds them back. The steps run one
after another on one machine, so a later step finds the kernels an earlier one compiled
(the evaluator caches them per candidate tree): run smallest first, that flatters the
larger counts. ``warm_up`` runs one unmeasured step first, so every measured step finds
the same caches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aka.errors import InputError

if TYPE_CHECKING:
    from aka.config import RunnerSettings

__all__ = [
    "ScaleStep",
    "WorkerRow",
    "default_counts",
    "read_step",
    "run_scale",
    "scale_step",
    "step_plan",
    "step_rows",
    "with_ratios",
]


@dataclass(frozen=True)
class WorkerRow:
    """One worker of a step, from the ``workers`` view.

    Attributes:
        worker: its id (``local-gpu3``, ``local-cpu0``).
        attempts_started: attempts it started (a killed worker's unfinished one included).
        attempts_finished: attempts it finished.
        busy_s: summed start-to-finish time of the attempts it finished.
        span_s: its first to its last event.
        utilization: ``busy_s / span_s`` (None for a worker with a zero span).
    """

    worker: str
    attempts_started: int
    attempts_finished: int
    busy_s: float
    span_s: float
    utilization: float | None


@dataclass(frozen=True)
class ScaleStep:
    """One run at one worker count.

    Attributes:
        workers: worker count (GPUs, or CPU workers).
        devices: what each worker was pinned to (``gpu0``..., or ``cpu`` per worker).
        run_id: the run, for ``aka report`` / ``aka sql``.
        attempts: attempts planned.
        scored_once: attempts with exactly one final score.
        unscored: attempt keys with no final score (lost, or failed every try).
        scored_twice: attempt keys with more than one final score (double-counted).
        wall_s: from starting the workers to the last one exiting (what a user waits).
        span_s: first attempt started to last attempt finished, from the ledger.
        per_hour: attempts scored once per hour of ``wall_s``.
        per_hour_span: the same per hour of ``span_s`` (worker start-up left out).
        ratio_to_linear: ``per_hour`` over the smallest step's, divided by the count ratio.
        worker_rows: per worker, from the ``workers`` view.
        killed: the worker this step killed on purpose (``--kill-after``), if any.
        died: the other workers that exited without a summary (crashed, killed, or
            refused by preflight: their own error is on stderr).
        warm_up: a step run only to fill the kernel caches (``--warm-up``), left out of
            the ratios.
    """

    workers: int
    devices: tuple[str, ...]
    run_id: str
    attempts: int
    scored_once: int
    unscored: tuple[str, ...]
    scored_twice: tuple[str, ...]
    wall_s: float
    span_s: float
    per_hour: float
    per_hour_span: float
    ratio_to_linear: float | None = None
    worker_rows: tuple[WorkerRow, ...] = field(default=())
    killed: str | None = None
    died: tuple[str, ...] = ()
    warm_up: bool = False

    @property
    def exactly_once(self) -> bool:
        """Every planned attempt scored, none twice."""
        return not self.unscored and not self.scored_twice and self.scored_once == self.attempts

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields, ``exactly_once`` included."""
        return {**asdict(self), "exactly_once": self.exactly_once}

    def summary(self) -> dict[str, object]:
        """The one-line table row (workers' rows and key lists left out)."""
        util = [w.utilization for w in self.worker_rows if w.utilization is not None]
        return {
            "workers": self.workers,
            "warm_up": self.warm_up,
            "run_id": self.run_id,
            "attempts": self.attempts,
            "exactly_once": self.exactly_once,
            "wall_s": round(self.wall_s, 1),
            "per_hour": round(self.per_hour, 1),
            "per_hour_span": round(self.per_hour_span, 1),
            "ratio_to_linear": None if self.ratio_to_linear is None else round(self.ratio_to_linear, 3),
            "min_utilization": round(min(util), 3) if util else None,
            "killed": self.killed or "",
            "died": " ".join(self.died),
            "attempts_by_worker": " ".join(f"{w.worker}:{w.attempts_finished}" for w in self.worker_rows),
        }  # fmt: skip


def default_counts(n: int) -> list[int]:
    """1, 2, 4, ... up to ``n``, and ``n`` itself: ``6`` -> ``[1, 2, 4, 6]``."""
    out, c = [], 1
    while c < n:
        out.append(c)
        c *= 2
    return [*out, n]


_FINAL = """
    SELECT a.attempt_key, count(s.eval_id) AS n
    FROM attempts a
    LEFT JOIN all_scores s ON s.run_id = a.run_id AND s.attempt_key = a.attempt_key
         AND s.purpose = 'final'
    WHERE a.run_id = ? GROUP BY a.attempt_key ORDER BY a.attempt_key
"""
_SPAN = """
    SELECT epoch(max(time) FILTER (WHERE type = 'AttemptFinished'))
           - epoch(min(time) FILTER (WHERE type = 'AttemptStarted'))
    FROM events WHERE run_id = ?
"""
_WORKERS = """
    SELECT worker, attempts_started, attempts_finished, busy_s, span_s, utilization
    FROM workers WHERE run_id = ? AND worker IS NOT NULL ORDER BY worker
"""


def step_rows(con: Any, run_id: str) -> tuple[dict[str, int], float, tuple[WorkerRow, ...]]:
    """Final scores per planned attempt, the attempts' span and the workers' rows of a run.

    Args:
        con: a DuckDB connection with the arena's views installed.
        run_id: the run.
    """
    counts = {str(k): int(n) for k, n in con.execute(_FINAL, [run_id]).fetchall()}
    span = con.execute(_SPAN, [run_id]).fetchone()
    rows = tuple(
        WorkerRow(str(w), int(s), int(f), float(b), float(sp or 0.0), u)
        for w, s, f, b, sp, u in con.execute(_WORKERS, [run_id]).fetchall()
    )
    return counts, float(span[0] or 0.0) if span else 0.0, rows


def scale_step(
    workers: int,
    devices: Sequence[str],
    run_id: str,
    counts: dict[str, int],
    wall_s: float,
    span_s: float,
    rows: Sequence[WorkerRow],
) -> ScaleStep:
    """A step from what the ledger holds (pure: the tests feed it messy counts)."""
    once = sum(1 for n in counts.values() if n == 1)
    return ScaleStep(
        workers=workers,
        devices=tuple(devices),
        run_id=run_id,
        attempts=len(counts),
        scored_once=once,
        unscored=tuple(k for k, n in counts.items() if n == 0),
        scored_twice=tuple(k for k, n in counts.items() if n > 1),
        wall_s=wall_s,
        span_s=span_s,
        per_hour=3600.0 * once / wall_s if wall_s > 0 else 0.0,
        per_hour_span=3600.0 * once / span_s if span_s > 0 else 0.0,
        worker_rows=tuple(rows),
    )


def with_ratios(steps: Sequence[ScaleStep]) -> list[ScaleStep]:
    """Each step's throughput against linear scaling from the smallest count's."""
    if not steps:
        return []
    measured = [s for s in steps if not s.warm_up]
    if not measured:
        return list(steps)
    base = min(measured, key=lambda s: s.workers)
    out = []
    for s in steps:
        ratio = None
        if base.per_hour > 0:
            ratio = (s.per_hour / base.per_hour) / (s.workers / base.workers)
        out.append(replace(s, ratio_to_linear=None if s.warm_up else ratio))
    return out


def step_plan(
    counts: Sequence[int], *, warm_up: bool = False, kill_after_s: float | None = None
) -> list[tuple[int, bool, float | None]]:
    """``(workers, warm_up, kill_after_s)`` per step: the warm-up first, the kill last.

    The kill goes to the last step only, and only where it has another worker to take
    the killed one's attempt over.
    """
    plan = [(max(counts), True)] if warm_up and counts else []
    plan += [(n, False) for n in counts]
    last = len(plan) - 1
    return [(n, w, kill_after_s if i == last and n > 1 else None) for i, (n, w) in enumerate(plan)]


def run_scale(
    ledger_dir: Path,
    config: Path,
    *,
    counts: Sequence[int],
    gpus: Sequence[int] | None = None,
    lease_ttl_s: float | None = None,
    label: str | None = None,
    kill_after_s: float | None = None,
    warm_up: bool = False,
    on_step: Callable[[ScaleStep], None] | None = None,
) -> list[ScaleStep]:
    """One run of ``config`` per count on the local runner, each read back from the ledger.

    Args:
        ledger_dir: the ledger every step's run goes into (created if missing).
        config: the run config (tasks, arms, device, repeats); its runner is replaced.
        counts: worker counts, in the order to run them.
        gpus: GPU indices; a count of n uses the first n. Without it: n CPU workers.
        lease_ttl_s: the lease TTL (default: the config's).
        label: run label prefix (default: the config's); each run is ``<label>-x<n>``
            (``<label>-warmup<n>`` for the warm-up).
        kill_after_s: the fault path: in the last step, SIGKILL the last worker (its
            whole process group: agent and evaluations too) this long after the workers
            start. Its claimed attempt is taken over by another worker once its lease
            expires, which the exactly-once check then confirms.
        warm_up: first run one unmeasured step at the largest count, so every measured
            step finds the same compiled kernels cached (without it the first step alone
            pays the compiles, which flatters the later, larger counts).
        on_step: called with each step as it ends (progress lines).

    Raises:
        InputError: a count above the number of GPUs given, or below 1.
    """
    from aka import orchestrator
    from aka.config import load_config
    from aka.events import REGISTRY
    from aka.liveness import holding
    from aka_ledger import Ledger

    for n in counts:
        if n < 1 or (gpus and n > len(gpus)):
            most = f"at most {len(gpus)} (the GPUs given)" if gpus else "1 or more"
            raise InputError(f"bad worker count {n}", where="--counts", fix=f"use {most}")
    prefix = label or load_config(config).label
    steps: list[ScaleStep] = []
    for n, warming, kill in step_plan(counts, warm_up=warm_up, kill_after_s=kill_after_s):
        chosen = list(gpus[:n]) if gpus else []
        over: dict[str, object] = {"kind": "local", "gpus": chosen}
        over |= {} if chosen else {"workers": n}
        if lease_ttl_s is not None:
            over["lease_ttl_s"] = lease_ttl_s
        name = f"{prefix}-{'warmup' if warming else 'x'}{n}"
        ledger = Ledger.open(Path(ledger_dir), registry=REGISTRY, create=True)
        try:
            with orchestrator.started_run(ledger, config, label=name, runner=over) as (rid, cfg):
                start = time.monotonic()
                with holding(ledger.root, rid):
                    killed, died = _run_workers(rid, Path(ledger_dir), cfg.runner, kill)
                wall = time.monotonic() - start
                orchestrator.finish_if_complete(ledger, rid, max_tries=cfg.max_tries)
        finally:
            ledger.close()
        counts_by_key, span, rows = read_step(Path(ledger_dir), rid)
        devices = [f"gpu{g}" for g in chosen] or ["cpu"] * n
        step = scale_step(n, devices, rid, counts_by_key, wall, span, rows)
        step = replace(step, killed=killed, died=died, warm_up=warming)
        steps.append(step)
        if on_step is not None:
            on_step(step)
    return with_ratios(steps)


def _run_workers(
    run_id: str,
    ledger_dir: Path,
    runner: RunnerSettings,
    kill_after_s: float | None,
    *,
    source: str | None = None,
) -> tuple[str | None, tuple[str, ...]]:
    """The local runner's workers for one step (``launch`` does the same, without the kill).

    Returns the id of the worker killed (None: no kill asked, or it had already exited)
    and those of the other workers that exited without a summary. ``source`` is an
    attempt source ``module:factory`` (tests).
    """
    import os
    import signal
    import threading

    from aka_runners._local import start_local

    started = start_local(run_id, ledger_dir, gpus=runner.gpus or None, workers=runner.workers,
                          lease_ttl_s=runner.lease_ttl_s, source=source)  # fmt: skip
    victim = started[-1] if kill_after_s is not None and len(started) > 1 else None
    killed: list[str] = []

    def kill() -> None:  # the group: the worker, its agent and its evaluations
        if victim is not None and victim.process.poll() is None:
            os.killpg(victim.process.pid, signal.SIGKILL)
            killed.append(victim.worker_id)

    timer = threading.Timer(kill_after_s or 0.0, kill) if victim is not None else None
    if timer is not None:
        timer.start()
    try:
        summaries = [w.wait() for w in started]
    finally:
        if timer is not None:
            timer.cancel()
    died = tuple(w.worker_id for w, s in zip(started, summaries, strict=True)
                 if s is None and w.worker_id not in killed)  # fmt: skip
    return (killed[0] if killed else None), died


def read_step(ledger_dir: Path, run_id: str) -> tuple[dict[str, int], float, tuple[WorkerRow, ...]]:
    """:func:`step_rows` from a freshly opened ledger (it sees every worker's events)."""
    from aka.events import REGISTRY
    from aka.runkeys import arena_authority
    from aka.views import install_views
    from aka_ledger import Ledger

    # Read as a report reads: outcome events not authenticated by the run's key count nowhere.
    ledger = Ledger.open(ledger_dir, registry=REGISTRY, authority=arena_authority(sign=False))
    try:
        con = install_views(ledger.connect())
        try:
            return step_rows(con, run_id)
        finally:
            con.close()
    finally:
        ledger.close()
