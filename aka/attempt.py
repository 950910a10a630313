"""One attempt, end to end: workspace, agent, capture, evaluation; every step an event.

The orchestrator (:mod:`aka.orchestrator`) decides which attempts run; this module runs
one, inside the recorder's boundary (:func:`aka.recorder.execute_attempt`), which turns
any failure into one ``AttemptFinished`` event: the attempt's own failure spends the
try; a task that fails itself, or the machine (a full disk, an unwritable ledger), is
never charged to the agent.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from aka import events as ev
from aka.agent import AgentItem, AgentOutcome, AgentRequest, get_agent
from aka.config import RunConfig
from aka.core import AttemptPlan
from aka.errors import AkaError, NotFoundError, TaskError
from aka.eval import EvalRequest, evaluate, workers_for_run
from aka.recorder import AttemptRecorder
from aka.recorder import execute_attempt as record_attempt
from aka.runkeys import key_dir, with_authority
from aka.selfeval import SOCKET_ENV, serve
from aka.taskhealth import TaskHealth
from aka.tasks import Task, baseline_task
from aka.treatments import (
    agent_settings,
    arm_env,
    arm_prompt,
    load_arm,
    memory_after,
    memory_before,
    place_files,
)
from aka.workspace import TaskCache, capture, materialize_workspace
from aka_ledger import Ledger

ITEM_BATCH = 64
ITEM_TEXT_CAP = 8192
ITEM_BYTES_CAP = 16 << 20
"""Agent item bytes stored per try (texts and data); the rest is counted, not stored."""


@dataclass
class RunContext:
    """A run's resolved inputs, read back from the ledger (never from the config file)."""

    run_id: str
    config: RunConfig
    started: ev.RunStarted
    tasks: TaskCache
    trees: dict[str, str] = field(default_factory=dict)
    """Task key -> tree its tries use: recorded at run start, or refreshed after a fix."""
    health: TaskHealth | None = None
    """Whether each task's baseline passes, asked only when a candidate fails."""

    def tree(self, key: str) -> str:
        """The tree digest task ``key``'s tries use now."""
        return self.trees.get(key) or self.started.tasks[key]

    def task(self, key: str) -> Task:
        """The task as the run records it (at its start, or as refreshed after a fix).

        Raises:
            TaskError: the recorded folder does not load (a broken task, never the
                agent's failure).
        """
        try:
            return self.tasks.get(key, self.tree(key))
        except AkaError as exc:
            raise TaskError(
                f"task {key} does not load: {exc.message}",
                where=f"{key}/task.yaml",
                fix=f"fix the task folder (`aka tasks validate {key}` shows what fails), "
                f"then `aka resume {self.run_id}`",
            ) from exc


def open_run(ledger: Ledger, run_id: str) -> RunContext:
    """Load a run's config and tasks from its RunStarted event and the content store.

    The ledger gets the arena's signing authority if it has none, so the outcome
    events the orchestrator and evaluator append carry the run key's MAC; this process's
    evaluation workers take the run's evaluator settings (warm or fresh processes).
    """
    with_authority(ledger)
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
    workers_for_run(config.evaluator.warm_workers)
    trees = dict(started.tasks)
    for e in ledger.events(run_id=run_id, types=["TaskRefreshed"]):
        if isinstance(e.payload, ev.TaskRefreshed):
            trees[e.payload.task] = e.payload.tree
    return RunContext(
        run_id=run_id,
        config=config,
        started=started,
        tasks=TaskCache(ledger.cas),
        trees=trees,
        health=TaskHealth(ledger, run_id),
    )


class _Sink:
    """Buffers agent items into AgentOutput events, storing at most ``cap`` bytes of them.

    An agent that prints without end would otherwise fill the ledger (and the memory of
    every later read) with its output; past the cap, items are counted, not stored, and
    one closing item says how many were left out.
    """

    def __init__(
        self, emit: Callable[[ev.EventModel], None], try_no: int, cap: int = ITEM_BYTES_CAP
    ):
        self.emit_event = emit
        self.try_no = try_no
        self.items: list[ev.AgentItemRecord] = []
        self.cap = cap
        self.stored = 0
        self.dropped = 0
        self.dropped_bytes = 0

    def emit(self, item: AgentItem) -> None:
        record = ev.AgentItemRecord(
            kind=item.kind,
            text=item.text[:ITEM_TEXT_CAP],
            data=json.dumps(dict(item.data), default=str)[:ITEM_TEXT_CAP],
        )
        size = len(record.text) + len(record.data)
        if self.stored + size > self.cap and item.kind not in ("usage", "error"):
            self.dropped += 1
            self.dropped_bytes += size
            return
        self.stored += size
        self.items.append(record)
        if len(self.items) >= ITEM_BATCH:
            self.flush()

    def close(self) -> None:
        """Flush, with one item saying what the cap left out (if anything)."""
        if self.dropped:
            self.items.append(
                ev.AgentItemRecord(
                    kind="log",
                    text=f"{self.dropped} items ({self.dropped_bytes} bytes) not stored: "
                    f"the agent's items reached the {self.cap} byte cap",
                    data=json.dumps(
                        {"dropped_items": self.dropped, "dropped_bytes": self.dropped_bytes}
                    ),
                )
            )
            self.dropped = 0
        self.flush()

    def flush(self) -> None:
        if self.items:
            items, self.items = self.items, []  # a failed append never grows the next batch
            self.emit_event(ev.AgentOutput(try_no=self.try_no, items=items))


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


def _judged_as(
    ledger: Ledger, ctx: RunContext, p: AttemptPlan, task: Task, captured: ev.CandidateCaptured
) -> Task:
    """The task as this attempt is judged.

    A control arm (``agent: noop`` with ``options: {control: true}``) that submits the
    starting sources unchanged is judged as the baseline is (:func:`aka.tasks.baseline_task`:
    forbidden names and the backend check lifted), so on a torch-to-kernel task, whose
    starting torch code is forbidden to candidates, it still times against the baseline
    and gives compare an A/A row. Any other submission is judged as a candidate.
    """
    if p.agent != "noop" or captured.changed:
        return task
    arm = load_arm(ledger.cas, ctx.started.arms[p.arm])
    return baseline_task(task) if arm.options.get("control") is True else task


def _eval_request(
    ctx: RunContext,
    p: AttemptPlan,
    task: Task,
    tree: str,
    *,
    purpose: ev.Purpose = "final",
    turn: int = 0,
) -> EvalRequest:
    return EvalRequest(
        task=task,
        task_tree=ctx.tree(p.task),
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
                try_no=p.try_no, tree=start or ws.start_tree, task=ctx.tree(p.task)
            )
        )
        before = memory_before(ledger, ctx.run_id, arm, ws.path, try_no=p.try_no)
        if before is not None:
            emit(before)
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
            )
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
                hidden=tuple(x for x in (ledger.root, key_dir()) if x is not None),
            )
            try:
                outcome = agent.run(request, sink)
            except Exception as exc:
                outcome = AgentOutcome(status="error", error=f"{type(exc).__name__}: {exc}")
        sink.close()
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
            )
        )
        after = memory_after(ledger.cas, arm, ws.path, try_no=p.try_no)
        if after is not None:
            emit(after)
        tree, diff, changed = capture(ledger.cas, task, ws.path)
    captured = ev.CandidateCaptured(
        try_no=p.try_no, tree=tree, diff=ledger.cas.put(diff), changed=changed
    )
    emit(captured)
    return captured


def execute_attempt(
    ledger: Ledger, run_id: str, p: AttemptPlan, *, worker_id: str, ctx: RunContext | None = None
) -> ev.Scored | None:
    """Run one try of an attempt end to end, inside the recorder's boundary.

    Returns the final Scored event, or None if the try failed (recorded as
    ``AttemptFinished`` with status ``error`` or ``task``; the planner decides what
    runs next). A full disk or an unwritable ledger raises ``InfrastructureError``.
    """
    run = ctx or open_run(ledger, run_id)

    def body(rec: AttemptRecorder) -> ev.Scored:
        task = run.task(p.task)
        if p.reuse_candidate is not None:
            c = p.reuse_candidate
            captured = ev.CandidateCaptured(
                try_no=p.try_no, tree=c.tree, diff=c.diff, changed=c.changed, reused_from=c.try_no
            )
            rec.emit(captured)
        else:
            captured = _run_agent(ledger, run, p, task, rec.emit)
        judged = _judged_as(ledger, run, p, task, captured)
        req = _eval_request(run, p, judged, captured.tree)
        vet = run.health.vet(req, p.task) if run.health is not None else None
        return evaluate(ledger, run_id, p.key, req, vet=vet)

    return record_attempt(ledger, run_id, p.key, p.try_no, worker=worker_id, body=body)
