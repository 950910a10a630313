"""The orchestrator: the one I/O shell around the pure core.

It is the only module that touches clocks, agents, the evaluator and the ledger together.
``aka run`` = :func:`start_run` then :func:`drive`; ``aka resume`` = :func:`drive` on an
existing run id: read → fold → plan → the same loop. Each attempt try is wrapped at one
boundary where any exception becomes an ``AttemptFinished(status="error")`` event, so a
crashing agent or evaluator never loses what was recorded before it.
"""

from __future__ import annotations

import json
import os
import platform
import re
import secrets
import shutil
import socket
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from aka import __version__
from aka import events as ev
from aka.agent import AgentItem, AgentOutcome, AgentRequest, get_agent
from aka.config import RunConfig, load_config, parse_config
from aka.core import AttemptPlan, RunState, attempt_key, fold, initial_plan, is_complete, plan
from aka.errors import InputError, NotFoundError
from aka.eval import EvalRequest, evaluate, harness_paths
from aka.liveness import holding
from aka.repo_tasks import task_tree
from aka.selfeval import SOCKET_ENV, serve
from aka.tasks import Task, select
from aka.treatments import (
    agent_settings,
    arm_env,
    arm_prompt,
    load_arm,
    memory_after,
    memory_before,
    place_files,
    resolve_arms,
)
from aka.workspace import TaskCache, capture, materialize_workspace
from aka_ledger import Ledger

ITEM_BATCH = 64
ITEM_TEXT_CAP = 8192


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


def start_run(
    ledger: Ledger,
    config: RunConfig,
    *,
    config_path: str,
    run_id: str | None = None,
    tasks_root: Path | None = None,
) -> str:
    """Validate everything, then record RunStarted and every AttemptPlanned.

    Nothing is written unless tasks and agents all resolve, so bad input records no run.
    """
    root = tasks_root or Path(config.tasks_root)
    tasks = select(root, config.tasks, where=config_path)
    for arm in config.arms:
        get_agent(arm.agent, where=f"{config_path}: arm {arm.name!r}, field 'agent'")
    device = resolve_device(config.device)
    runnable = [t for t in tasks if ("cpu" if device == "cpu" else "cuda") in t.spec.devices]
    if not runnable:
        raise InputError(
            f"no selected task runs on device {device!r}",
            where=config_path,
            fix="select tasks whose `devices` include it, or change `device`",
        )
    run_id = run_id or new_run_id(config.label)
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
        tasks={t.key: task_tree(ledger.cas, t) for t in runnable},
        arms=arms,
        device=device,
        environment=ledger.cas.put(json.dumps(environment(), sort_keys=True).encode()),
        harness=harness_digest(ledger),
        policy=config.scoring.policy,
        aka_version=__version__,
    )
    planned = initial_plan(
        [t.key for t in runnable], [(a.name, a.agent) for a in config.arms], config.repeats
    )
    items: list[tuple[ev.EventModel, str, str | None]] = [(started, run_id, None)]
    items += [(p, run_id, attempt_key(p.task, p.arm, p.repeat)) for p in planned]
    ledger.append_many(items, durable=True)
    return run_id


@dataclass
class RunContext:
    """A run's resolved inputs, read back from the ledger (never from the config file)."""

    run_id: str
    config: RunConfig
    started: ev.RunStarted
    tasks: TaskCache

    def task(self, key: str) -> Task:
        """The task as recorded at run start."""
        return self.tasks.get(key, self.started.tasks[key])


def open_run(ledger: Ledger, run_id: str) -> RunContext:
    """Load a run's config and tasks from its RunStarted event and the content store."""
    found = ledger.events(run_id=run_id, types=["RunStarted"])
    if not found:
        raise NotFoundError(
            f"no run {run_id!r} in the ledger",
            where=str(ledger.root),
            fix="`aka status` lists runs",
        )
    started = found[0].payload
    assert isinstance(started, ev.RunStarted)
    config = RunConfig.model_validate_json(ledger.cas.get(started.config))
    return RunContext(run_id=run_id, config=config, started=started, tasks=TaskCache(ledger.cas))


def run_state(ledger: Ledger, run_id: str) -> RunState:
    """Read and fold one run."""
    return fold(run_id, ledger.events(run_id=run_id))


def pending_attempts(ledger: Ledger, run_id: str) -> list[AttemptPlan]:
    """What is left to run: the pure plan over the folded events."""
    ctx_cfg = open_run(ledger, run_id).config
    return plan(run_state(ledger, run_id), max_tries=ctx_cfg.max_tries)


class _Sink:
    """Buffers agent items into AgentOutput events."""

    def __init__(self, emit: Callable[[ev.EventModel], None], try_no: int):
        self.emit_event = emit
        self.try_no = try_no
        self.items: list[ev.AgentItemRecord] = []

    def emit(self, item: AgentItem) -> None:
        self.items.append(
            ev.AgentItemRecord(
                kind=item.kind,
                text=item.text[:ITEM_TEXT_CAP],
                data=json.dumps(dict(item.data), default=str)[:ITEM_TEXT_CAP],
            )
        )
        if len(self.items) >= ITEM_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.items:
            self.emit_event(ev.AgentOutput(try_no=self.try_no, items=self.items))
            self.items = []


def _agent_env() -> dict[str, str]:
    """The agent's environment: never the ledger's location."""
    return {k: v for k, v in os.environ.items() if not k.startswith("AKA_")}


@contextmanager
def _workspace_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="aka-ws-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _eval_request(
    ctx: RunContext, p: AttemptPlan, task: Task, tree: str, *, purpose: str = "final", turn: int = 0
) -> EvalRequest:
    return EvalRequest(
        task=task,
        task_tree=ctx.started.tasks[p.task],
        candidate=tree,
        harness=ctx.started.harness,
        device=ctx.started.device,
        policy=ctx.started.policy,
        timing=ctx.config.timing,
        try_no=p.try_no,
        purpose=purpose,
        turn=turn,
    )


def _run_agent(
    ledger: Ledger, ctx: RunContext, p: AttemptPlan, task: Task, emit: Callable[..., None]
) -> ev.CandidateCaptured:
    arm = load_arm(ledger.cas, ctx.started.arms[p.arm])
    with _workspace_dir() as ws_path:
        ws = materialize_workspace(ledger.cas, task, ws_path)
        start = ledger.cas.snapshot(ws.path) if place_files(ledger.cas, arm, ws.path) else None
        emit(
            ev.WorkspaceMaterialized(
                try_no=p.try_no, tree=start or ws.start_tree, task=ctx.started.tasks[p.task]
            )
        )
        before = memory_before(ledger, ctx.run_id, arm, ws.path, try_no=p.try_no)
        if before is not None:
            emit(before, durable=True)
        prompt = arm_prompt(
            ledger.cas, arm, task, device=ctx.started.device, eval_command="aka eval"
        )
        agent = get_agent(p.agent)
        treatment_env = arm_env(arm)  # a secret gone since the run started fails here
        emit(
            ev.AgentStarted(
                try_no=p.try_no,
                agent=p.agent,
                arm=ctx.started.arms[p.arm],
                prompt=ledger.cas.put(prompt.encode()),
                timeout_seconds=arm.timeout_seconds,
            ),
            durable=True,
        )
        sink = _Sink(lambda e: emit(e), p.try_no)

        def self_eval(turn: int) -> ev.Scored:
            tree, _, _ = capture(ledger.cas, task, ws.path)
            return evaluate(
                ledger,
                ctx.run_id,
                p.key,
                _eval_request(ctx, p, task, tree, purpose="self", turn=turn),
            )

        t0 = time.monotonic()
        with serve(self_eval) as sock:
            request = AgentRequest(
                workspace=ws.path,
                prompt=prompt,
                settings=agent_settings(arm),
                editable=tuple(task.spec.editable),
                targets=tuple(task.spec.targets),
                env={**_agent_env(), **treatment_env, SOCKET_ENV: sock},
                eval_command=("aka", "eval"),
                task_name=task.name,
                entry_file=task.spec.entry_file,
                tunables={k: tuple(v) for k, v in task.spec.tunables.items()},
                memory_dir=None if arm.memory is None else ws.path / arm.memory.path,
            )
            try:
                outcome = agent.run(request, sink)
            except Exception as exc:
                outcome = AgentOutcome(status="error", error=f"{type(exc).__name__}: {exc}")
        sink.flush()
        transcript = ledger.cas.put(outcome.transcript) if outcome.transcript else None
        emit(
            ev.AgentFinished(
                try_no=p.try_no,
                status=outcome.status,
                exit_code=outcome.exit_code,
                model=outcome.model,
                tokens_in=outcome.tokens_in,
                tokens_out=outcome.tokens_out,
                cost_usd=outcome.cost_usd,
                wall_s=time.monotonic() - t0,
                transcript=transcript,
                error=outcome.error,
            ),
            durable=True,
        )
        after = memory_after(ledger.cas, arm, ws.path, try_no=p.try_no)
        if after is not None:
            emit(after, durable=True)
        tree, diff, changed = capture(ledger.cas, task, ws.path)
    captured = ev.CandidateCaptured(
        try_no=p.try_no, tree=tree, diff=ledger.cas.put(diff), changed=changed
    )
    emit(captured, durable=True)
    return captured


def execute_attempt(
    ledger: Ledger, run_id: str, p: AttemptPlan, *, worker_id: str, ctx: RunContext | None = None
) -> ev.Scored | None:
    """Run one try of an attempt end to end; every step is an event.

    Returns the final Scored event, or None if the try failed at the infrastructure
    level (recorded as ``AttemptFinished(status="error")`` and retried by the planner).
    """
    ctx = ctx or open_run(ledger, run_id)

    def emit(event: ev.EventModel, durable: bool = False) -> None:
        ledger.append(event, run_id=run_id, attempt_key=p.key, durable=durable)

    emit(ev.AttemptStarted(try_no=p.try_no, worker=worker_id), durable=True)
    try:
        task = ctx.task(p.task)
        if p.reuse_candidate is not None:
            c = p.reuse_candidate
            captured = ev.CandidateCaptured(
                try_no=p.try_no, tree=c.tree, diff=c.diff, changed=c.changed, reused_from=c.try_no
            )
            emit(captured, durable=True)
        else:
            captured = _run_agent(ledger, ctx, p, task, emit)
        scored = evaluate(ledger, run_id, p.key, _eval_request(ctx, p, task, captured.tree))
    except Exception as exc:  # the attempt boundary: any failure becomes an event
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        emit(ev.AttemptFinished(try_no=p.try_no, status="error", error=detail[:2000]), durable=True)
        return None
    emit(ev.AttemptFinished(try_no=p.try_no, status="scored"), durable=True)
    return scored


def finish_if_complete(ledger: Ledger, run_id: str, *, max_tries: int) -> RunState:
    """Append RunFinished once no attempt is left to run (after inline or worker runs)."""
    state = run_state(ledger, run_id)
    if state.finished is None and is_complete(state, max_tries=max_tries):
        n_scored = sum(1 for a in state.attempts.values() if a.score is not None)
        ledger.append(
            ev.RunFinished(attempts=len(state.attempts), scored=n_scored),
            run_id=run_id,
            durable=True,
        )
        state = run_state(ledger, run_id)
    return state


ProgressFn = Callable[[AttemptPlan, ev.Scored | None, int, int], None]
"""Called after each attempt: (plan, its final score or None, attempts done, total)."""
StartFn = Callable[[AttemptPlan, int, int], None]
"""Called before each attempt: (plan, its 1-based position, total)."""


def drive(
    ledger: Ledger,
    run_id: str,
    *,
    worker_id: str | None = None,
    progress: ProgressFn | None = None,
    on_start: StartFn | None = None,
) -> RunState:
    """Run every pending attempt of ``run_id`` until none is left; the run and resume loop.

    While it works, this process holds the run's lock (:mod:`aka.liveness`), so a run
    whose driver was killed reads as interrupted rather than running.
    """
    ctx = open_run(ledger, run_id)
    worker = worker_id or f"{socket.gethostname()}/{ctx.started.device}/{os.getpid()}"
    try:
        with holding(ledger.root, run_id):
            while todo := plan(run_state(ledger, run_id), max_tries=ctx.config.max_tries):
                total = len(todo)
                for i, p in enumerate(todo, 1):
                    if on_start:
                        on_start(p, i, total)
                    scored = execute_attempt(ledger, run_id, p, worker_id=worker, ctx=ctx)
                    if progress:
                        progress(p, scored, i, total)
            return finish_if_complete(ledger, run_id, max_tries=ctx.config.max_tries)
    finally:
        ctx.tasks.close()


def prepare_run(
    ledger: Ledger,
    config_path: Path,
    *,
    label: str | None = None,
    run_id: str | None = None,
    runner: dict[str, object] | None = None,
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
    root = Path(config.tasks_root)
    if not root.is_absolute() and not root.exists():
        root = config_path.parent.parent / config.tasks_root  # configs/x.yaml -> ../tasks
    rid = start_run(ledger, config, config_path=str(config_path), run_id=run_id, tasks_root=root)
    return rid, config


def run(
    ledger: Ledger,
    config_path: Path,
    *,
    label: str | None = None,
    run_id: str | None = None,
    progress: ProgressFn | None = None,
) -> str:
    """``aka run`` with the inline runner: start the run and drive it to the end."""
    rid, _ = prepare_run(ledger, config_path, label=label, run_id=run_id)
    drive(ledger, rid, progress=progress)
    return rid
