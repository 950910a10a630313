"""The orchestrator: the one I/O shell around the pure core.

With :mod:`aka.attempt` (one attempt, end to end) it is the only code that touches
clocks, agents, the evaluator and the ledger together. ``aka run`` = :func:`start_run`
then :func:`drive`; ``aka resume`` = :func:`drive` on an existing run id: read → fold →
plan → the same loop, claiming each attempt like every runner's workers. Runs start and
attempt tries are recorded through :mod:`aka.recorder`, whose boundary turns any failure
into one ``AttemptFinished`` event, so a crashing agent or evaluator never loses what was
recorded before it, and a broken task or a full disk is never charged to the agent.
"""

from __future__ import annotations

import json
import os
import platform
import re
import secrets
import socket
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from aka import __version__, recorder
from aka import events as ev
from aka.agent import get_agent
from aka.attempt import RunContext, execute_attempt, open_run
from aka.config import RunConfig, load_config, parse_config
from aka.core import (
    AttemptPlan,
    RunState,
    attempt_key,
    blocked,
    fold,
    initial_plan,
    is_complete,
    plan,
)
from aka.errors import InputError, TaskError
from aka.eval import harness_paths
from aka.kinds import stage_tree
from aka.liveness import holding
from aka.runkeys import with_authority
from aka.runlock import check_run_id, hold_run
from aka.tasks import Task, select
from aka.treatments import (
    resolve_arms,
)
from aka.workloop import run_worker
from aka_ledger import Ledger


def resolve_device(device: str) -> str:
    """'auto' becomes 'cuda' when torch sees a GPU, else 'cpu'."""
    if device != "auto":
        return device
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def environment() -> dict[str, str]:
    """The environment fingerprint recorded with every run."""
    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "aka": __version__,
    }
    for dist in ("torch", "triton", "numpy"):
        try:
            env[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            env[dist] = "absent"
    return env


def new_run_id(label: str) -> str:
    """A sortable, unique run id: UTC timestamp, label, random suffix."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-.")[:40] or "run"
    return f"{stamp}-{slug}-{secrets.token_hex(3)}"


def harness_digest(ledger: Ledger) -> str:
    """Tree digest of the evaluator's code: part of every score's provenance."""
    root, paths = harness_paths()
    return ledger.cas.snapshot(root, paths=paths)


def why_not_runnable(task: Task, device: str) -> str | None:
    """Why ``task`` cannot run on ``device`` (with the fix), or None when it can."""
    kind = "cpu" if device == "cpu" else "cuda"
    if kind not in task.spec.devices:
        return (
            f"it runs on {task.spec.devices} only and the device is {device} "
            f"(fix: run it on {task.spec.devices[0]}, or give it {kind} shapes and add {kind} "
            "to its devices)"
        )
    if task.spec.commands is not None and task.spec.commands.skip_reason:
        return f"{task.spec.commands.skip_reason} (fix: run it on the platform it names)"
    return None


def start_run(
    ledger: Ledger,
    config: RunConfig,
    *,
    config_path: str,
    run_id: str | None = None,
    tasks_root: Path | None = None,
    on_drop: Callable[[str, str], None] | None = None,
) -> str:
    """Validate everything, then record RunStarted and every AttemptPlanned.

    Nothing is written unless tasks and agents all resolve, so bad input records no run.
    Selected tasks that cannot run on the device are left out, each passed to
    ``on_drop`` with the reason, never silently.
    """
    root = tasks_root or Path(config.tasks_root)
    tasks = select(root, config.tasks, where=config_path)
    for arm in config.arms:
        get_agent(arm.agent, where=f"{config_path}: arm {arm.name!r}, field 'agent'")
    device = resolve_device(config.device)
    runnable = []
    for t in tasks:
        why = why_not_runnable(t, device)
        if why is None:
            runnable.append(t)
        elif on_drop is not None:
            on_drop(t.key, why)
    if not runnable:
        raise InputError(
            f"no selected task runs on device {device!r}",
            where=config_path,
            fix="select tasks whose `devices` include it, or change `device`",
        )
    run_id = check_run_id(run_id) if run_id is not None else new_run_id(config.label)
    with_authority(ledger)
    if ledger.events(run_id=run_id, types=["RunStarted"]):
        raise InputError(
            f"run {run_id!r} already exists", fix="use `aka resume` or pick another --run-id"
        )
    cfg_file = Path(config_path)
    arms = resolve_arms(
        ledger.cas,
        config,
        base_dir=cfg_file.parent if cfg_file.is_file() else Path.cwd(),
        tasks=runnable,
        where=config_path,
    )
    started = ev.RunStarted(
        label=config.label,
        config=ledger.cas.put(config.canonical_json()),
        config_path=config_path,
        tasks={t.key: stage_tree(ledger.cas, t) for t in runnable},
        arms=arms,
        device=device,
        environment=ledger.cas.put(json.dumps(environment(), sort_keys=True).encode()),
        harness=harness_digest(ledger),
        policy=config.scoring.policy,
        aka_version=__version__,
        writers={w: (m.last, m.head) for w, m in ledger.marks().items()},
    )
    planned = initial_plan(
        [t.key for t in runnable], [(a.name, a.agent) for a in config.arms], config.repeats
    )
    keyed = [(attempt_key(p.task, p.arm, p.repeat), p) for p in planned]
    recorder.start_run(ledger, run_id, started, keyed)
    return run_id


def run_state(ledger: Ledger, run_id: str) -> RunState:
    """Read and fold one run."""
    return fold(run_id, ledger.events(run_id=run_id))


def pending_attempts(ledger: Ledger, run_id: str) -> list[AttemptPlan]:
    """What is left to run: the pure plan over the folded events."""
    ctx_cfg = open_run(ledger, run_id).config
    return plan(run_state(ledger, run_id), max_tries=ctx_cfg.max_tries)


def finish_if_complete(ledger: Ledger, run_id: str, *, max_tries: int) -> RunState:
    """Append RunFinished once no attempt is left to run (after inline or worker runs)."""
    state = run_state(ledger, run_id)
    if state.finished is None and is_complete(state, max_tries=max_tries):
        n_scored = sum(1 for a in state.attempts.values() if a.score is not None)
        recorder.finish_run(ledger, run_id, attempts=len(state.attempts), scored=n_scored)
        state = run_state(ledger, run_id)
    return state


ProgressFn = Callable[[AttemptPlan, ev.Scored | None, int, int], None]
"""Called after each attempt: (plan, its final score or None, attempts done, total)."""
StartFn = Callable[[AttemptPlan, int, int], None]
"""Called before each attempt: (plan, its 1-based position, total)."""


class _InlineSource:
    """The run's pending attempts and their execution in this process (the inline runner)."""

    def __init__(
        self,
        ledger: Ledger,
        ctx: RunContext,
        progress: ProgressFn | None,
        on_start: StartFn | None = None,
    ):
        self._ledger = ledger
        self._ctx = ctx
        self._progress = progress
        self._on_start = on_start
        self._done = 0
        self._left = 0

    def pending(self) -> list[AttemptPlan]:
        todo = plan(run_state(self._ledger, self._ctx.run_id), max_tries=self._ctx.config.max_tries)
        self._left = len(todo)
        return todo

    def execute(self, p: AttemptPlan, *, device: str, worker_id: str) -> None:
        total = self._done + self._left
        if self._on_start:
            self._on_start(p, self._done + 1, max(total, self._done + 1))
        scored = execute_attempt(
            self._ledger, self._ctx.run_id, p, worker_id=worker_id, ctx=self._ctx
        )
        self._done += 1
        if self._progress:
            self._progress(p, scored, self._done, max(total, self._done))


def drive(
    ledger: Ledger,
    run_id: str,
    *,
    worker_id: str | None = None,
    progress: ProgressFn | None = None,
    lease_ttl_s: float = 60.0,
    on_start: StartFn | None = None,
) -> RunState:
    """Run every pending attempt of ``run_id`` until none is left; the run and resume loop.

    Attempts are claimed through the same lease files as every other runner's workers
    (:func:`aka.workloop.run_worker`), so an ``aka worker`` started by hand beside it, or
    a second driver that got past the run lock, never runs an attempt twice. An
    in-memory ledger belongs to this process alone and runs without claims. While it
    works, this process holds the run's liveness lock (:mod:`aka.liveness`), so a run
    whose driver was killed reads as interrupted rather than running.
    """
    ctx = open_run(ledger, run_id)
    worker = worker_id or f"{socket.gethostname()}/{ctx.started.device}/{os.getpid()}"
    source = _InlineSource(ledger, ctx, progress, on_start)
    refresh_tasks(ledger, ctx)
    try:
        with holding(ledger.root, run_id):
            if ledger.root is None:
                while todo := source.pending():
                    source.execute(todo[0], device=ctx.started.device, worker_id=worker)
            else:
                run_worker(
                    ledger.root,
                    run_id,
                    source,
                    worker_id=worker,
                    device=ctx.started.device,
                    lease_ttl_s=lease_ttl_s,
                )
        state = finish_if_complete(ledger, run_id, max_tries=ctx.config.max_tries)
    finally:
        ctx.tasks.close()
    waiting = blocked(state, max_tries=ctx.config.max_tries)
    if waiting:
        tasks = sorted({a.planned.task for a in waiting})
        raise TaskError(
            f"run {run_id!r}: {len(waiting)} attempt(s) wait until task(s) {tasks} are fixed; "
            "nothing was charged to the agent\n"
            + "\n".join(state.broken[t] for t in tasks)  # each names its file and the fix
        )
    return state


def tasks_root_for(config: RunConfig, config_path: Path) -> Path:
    """Where a config's tasks live: ``tasks_root`` as given, else beside the config's folder."""
    root = Path(config.tasks_root)
    if not root.is_absolute() and not root.exists():
        root = config_path.parent.parent / config.tasks_root  # configs/x.yaml -> ../tasks
    return root


def refresh_tasks(ledger: Ledger, ctx: RunContext) -> list[str]:
    """Record ``TaskRefreshed`` for each broken task whose folder on disk has changed.

    A task that failed by itself stops its attempts (:func:`aka.core.blocked`); once its
    folder is fixed, resuming the run takes the new tree, and every later evaluation
    names it. A folder that is unchanged, or gone, leaves its attempts waiting.
    Returns the refreshed task keys.
    """
    state = run_state(ledger, ctx.run_id)
    if not state.broken:
        return []
    root = tasks_root_for(ctx.config, Path(ctx.started.config_path))
    done = []
    for key in sorted(state.broken):
        try:
            (task,) = select(root, [key], where=ctx.started.config_path)[:1]
            tree = stage_tree(ledger.cas, task)
        except InputError:
            continue
        previous = ctx.tree(key)
        if tree != previous:
            refreshed = ev.TaskRefreshed(task=key, tree=tree, previous=previous)
            recorder.record(ledger, ctx.run_id, refreshed)
            ctx.trees[key] = tree
            done.append(key)
    return done


def prepare_run(
    ledger: Ledger,
    config_path: Path,
    *,
    label: str | None = None,
    run_id: str | None = None,
    runner: dict[str, object] | None = None,
    warm_workers: bool | None = None,
    on_drop: Callable[[str, str], None] | None = None,
) -> tuple[str, RunConfig]:
    """Load and validate the config (with CLI overrides), then record the run's start."""
    config = load_config(config_path)
    if label:
        config = config.model_copy(update={"label": label})
    if runner:
        merged = {**config.runner.model_dump(), **runner}
        config = parse_config(
            {**config.model_dump(mode="json"), "runner": merged}, where=str(config_path)
        )
    if warm_workers is not None:
        evaluator = config.evaluator.model_copy(update={"warm_workers": warm_workers})
        config = config.model_copy(update={"evaluator": evaluator})
    root = tasks_root_for(config, config_path)
    rid = start_run(
        ledger, config, config_path=str(config_path), run_id=run_id, tasks_root=root,
        on_drop=on_drop,
    )  # fmt: skip
    return rid, config


@contextmanager
def started_run(
    ledger: Ledger,
    config_path: Path,
    *,
    label: str | None = None,
    run_id: str | None = None,
    runner: dict[str, object] | None = None,
    warm_workers: bool | None = None,
    on_drop: Callable[[str, str], None] | None = None,
) -> Iterator[tuple[str, RunConfig]]:
    """:func:`prepare_run` under the run lock, held until the ``with`` block ends.

    A given ``run_id`` is locked before the ledger is checked for it, so of two
    ``aka run --run-id X`` one records the run and the other is refused; a generated id
    is locked as soon as it is recorded.
    """
    with ExitStack() as stack:
        if run_id is not None:
            stack.enter_context(hold_run(ledger, run_id))
        rid, config = prepare_run(
            ledger, config_path, label=label, run_id=run_id, runner=runner,
            warm_workers=warm_workers, on_drop=on_drop,
        )  # fmt: skip
        if run_id is None:
            stack.enter_context(hold_run(ledger, rid))
        yield rid, config


def run(
    ledger: Ledger,
    config_path: Path,
    *,
    label: str | None = None,
    run_id: str | None = None,
    progress: ProgressFn | None = None,
) -> str:
    """``aka run`` with the inline runner: start the run and drive it to the end."""
    with started_run(ledger, config_path, label=label, run_id=run_id) as (rid, _):
        drive(ledger, rid, progress=progress)
    return rid
