"""One attempt, end to end: workspace, agent, capture, evaluation; every step an event.

The orchestrator (:mod:`aka.orchestrator`) decides which attempts run; this module runs
one. Its boundary (:func:`execute_attempt`) turns any failure into an
``AttemptFinished(status="error")`` event, except a failure of the machine (a full
disk, an unwritable ledger), which stops the run as an :class:`InfrastructureError`
so the agent is never charged for it.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from aka import events as ev
from aka.agent import AgentItem, AgentOutcome, AgentRequest, get_agent
from aka.config import RunConfig
from aka.core import AttemptPlan
from aka.errors import InfrastructureError, NotFoundError
from aka.eval import EvalRequest, evaluate
from aka.runkeys import with_authority
from aka.selfeval import SOCKET_ENV, serve
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
from aka_ledger import Ledger, LedgerError, MissingBlobError, SchemaError

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

    def task(self, key: str) -> Task:
        """The task as recorded at run start."""
        return self.tasks.get(key, self.started.tasks[key])


def open_run(ledger: Ledger, run_id: str) -> RunContext:
    """Load a run's config and tasks from its RunStarted event and the content store.

    The ledger gets the arena's signing authority if it has none, so the outcome
    events the orchestrator and evaluator append carry the run key's MAC.
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
    return RunContext(run_id=run_id, config=config, started=started, tasks=TaskCache(ledger.cas))


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
            emit(captured)
        else:
            captured = _run_agent(ledger, ctx, p, task, emit)
        judged = _judged_as(ledger, ctx, p, task, captured)
        scored = evaluate(ledger, run_id, p.key, _eval_request(ctx, p, judged, captured.tree))
    except Exception as exc:  # the attempt boundary: any failure becomes an event
        if _infrastructure(exc):
            raise InfrastructureError(
                f"run {run_id!r} stopped at attempt {p.key} (try {p.try_no}): the ledger or "
                f"the disk could not be written ({_one_line(exc)}); nothing was charged to "
                "the agent",
                where=str(ledger.root or "ledger"),
                fix=f"free space (or make the ledger writable), then `aka resume {run_id}`",
            ) from exc
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        emit(ev.AttemptFinished(try_no=p.try_no, status="error", error=detail[:2000]), durable=True)
        return None
    emit(ev.AttemptFinished(try_no=p.try_no, status="scored"), durable=True)
    return scored


_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}


def _infrastructure(exc: BaseException) -> bool:
    """Whether a failure is the machine's (the ledger unwritable, a full disk)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, LedgerError) and not isinstance(cur, SchemaError | MissingBlobError):
            return True
        if isinstance(cur, OSError) and cur.errno in _FULL:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def _one_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
