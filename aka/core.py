"""The pure core: fold events into state, and plan what is left to do.

Nothing here touches a clock, a file or a process, so ``aka resume`` is literally
read → :func:`fold` → :func:`plan` → the same loop as ``aka run``, and replaying the same
events always gives the same state.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from aka import events as ev
from aka_ledger import Envelope

UNCHARGED = ("task", "infra")
"""``AttemptFinished`` statuses that do not spend a try."""


@dataclass(frozen=True)
class TryState:
    """One try of an attempt, as far as the events go."""

    try_no: int
    worker: str = ""
    workspace: str | None = None
    agent_started: bool = False
    agent_finished: ev.AgentFinished | None = None
    candidate: ev.CandidateCaptured | None = None
    final_eval: str | None = None
    score: ev.Scored | None = None
    finished: ev.AttemptFinished | None = None


@dataclass(frozen=True)
class AttemptState:
    """An attempt: its plan and its tries."""

    key: str
    planned: ev.AttemptPlanned
    tries: tuple[TryState, ...] = ()

    @property
    def score(self) -> ev.Scored | None:
        """The attempt's final score, if any try produced one."""
        for t in self.tries:
            if t.score is not None:
                return t.score
        return None

    @property
    def spent(self) -> int:
        """Tries charged to the attempt: all but those the task or the machine stopped.

        A try stopped by a broken task or a full disk (``AttemptFinished`` status
        ``task`` or ``infra``) says nothing about the agent, so it never uses up
        ``max_tries``; an interrupted try (no ``AttemptFinished``: a kill) does.
        """
        return sum(
            1 for t in self.tries if t.finished is None or t.finished.status not in UNCHARGED
        )

    @property
    def next_try(self) -> int:
        """The number the next try gets."""
        return max((t.try_no for t in self.tries), default=0) + 1

    def reusable_candidate(self) -> ev.CandidateCaptured | None:
        """A candidate captured by an unfinished earlier try (the agent's work survived)."""
        for t in reversed(self.tries):
            if t.candidate is not None:
                return t.candidate
        return None


@dataclass(frozen=True)
class RunState:
    """Everything known about one run."""

    run_id: str
    started: ev.RunStarted | None = None
    attempts: dict[str, AttemptState] = field(default_factory=dict)
    finished: ev.RunFinished | None = None
    trees: dict[str, str] = field(default_factory=dict)
    """Task key -> the tree its tries use now (``RunStarted``, then ``TaskRefreshed``)."""
    broken: dict[str, str] = field(default_factory=dict)
    """Task key -> why the task itself failed, until it is refreshed; its attempts wait."""


def _update_try(state: AttemptState, try_no: int, **changes: object) -> AttemptState:
    tries = list(state.tries)
    for i, t in enumerate(tries):
        if t.try_no == try_no:
            tries[i] = replace(t, **changes)  # type: ignore[arg-type]
            return replace(state, tries=tuple(tries))
    tries.append(replace(TryState(try_no=try_no), **changes))  # type: ignore[arg-type]
    return replace(state, tries=tuple(sorted(tries, key=lambda t: t.try_no)))


def _apply(state: RunState, env: Envelope) -> RunState:
    p = env.payload
    if isinstance(p, ev.RunStarted):
        if state.started is not None:
            return state
        return replace(state, started=p, trees=dict(p.tasks))
    if isinstance(p, ev.RunFinished):
        return replace(state, finished=p)
    if isinstance(p, ev.TaskRefreshed):
        broken = {k: v for k, v in state.broken.items() if k != p.task}
        return replace(state, trees={**state.trees, p.task: p.tree}, broken=broken)
    key = env.attempt_key
    if key is None:
        return state
    if isinstance(p, ev.AttemptPlanned):
        if key in state.attempts:
            return state
        return replace(state, attempts={**state.attempts, key: AttemptState(key=key, planned=p)})
    attempt = state.attempts.get(key)
    if attempt is None:
        return state
    changes: dict[str, object] | None = None
    try_no = getattr(p, "try_no", 0)
    if isinstance(p, ev.AttemptStarted):
        changes = {"worker": p.worker}
    elif isinstance(p, ev.WorkspaceMaterialized):
        changes = {"workspace": p.tree}
    elif isinstance(p, ev.AgentStarted):
        changes = {"agent_started": True}
    elif isinstance(p, ev.AgentFinished):
        changes = {"agent_finished": p}
    elif isinstance(p, ev.CandidateCaptured):
        changes = {"candidate": p}
    elif isinstance(p, ev.EvaluationStarted) and p.purpose == "final":
        changes = {"final_eval": p.eval_id}
    elif isinstance(p, ev.Scored) and p.purpose == "final":
        changes = {"score": p}
    elif isinstance(p, ev.AttemptFinished):
        changes = {"finished": p}
        if p.status == "task":
            task = attempt.planned.task
            state = replace(state, broken={**state.broken, task: p.error or "the task failed"})
    if changes is None or try_no < 1:
        return state
    updated = _update_try(attempt, try_no, **changes)
    return replace(state, attempts={**state.attempts, key: updated})


def fold(run_id: str, envelopes: Iterable[Envelope]) -> RunState:
    """Fold a run's events (in ledger order) into its state. Pure and deterministic."""
    state = RunState(run_id=run_id)
    for env in envelopes:
        if env.run_id == run_id:
            state = _apply(state, env)
    return state


@dataclass(frozen=True)
class AttemptPlan:
    """One unit of work: run (or re-run) an attempt as a new try."""

    key: str
    task: str
    arm: str
    agent: str
    repeat: int
    order: int
    try_no: int
    reuse_candidate: ev.CandidateCaptured | None = None


def attempt_key(task: str, arm: str, repeat: int) -> str:
    """The stable key of an attempt within a run."""
    return f"{task}#{arm}#{repeat}"


def initial_plan(
    tasks: list[str], arms: list[tuple[str, str]], repeats: int
) -> list[ev.AttemptPlanned]:
    """Every attempt of a run, interleaving arms per task so drift hits them alike.

    Order: for each repeat, for each task, every arm (the arm order rotates with the
    repeat so neither arm is always first).
    """
    out: list[ev.AttemptPlanned] = []
    for r in range(repeats):
        for task in tasks:
            rotated = arms[r % len(arms) :] + arms[: r % len(arms)]
            for arm, agent in rotated:
                out.append(
                    ev.AttemptPlanned(task=task, arm=arm, agent=agent, repeat=r, order=len(out))
                )
    return out


def plan(state: RunState, *, max_tries: int) -> list[AttemptPlan]:
    """The attempts still to run, in planned order.

    An attempt with a final score is done and never re-run. An attempt whose last try
    ended without a score (an intent with no result: a crash, a kill, an infrastructure
    error) is retried as a new try, reusing a captured candidate so the agent's work is
    not thrown away, until ``max_tries`` tries have been spent (:attr:`AttemptState.spent`:
    a try stopped by the task or the machine is not). The attempts of a task that failed
    itself wait (:func:`blocked`) until the task is refreshed.
    """
    todo: list[AttemptPlan] = []
    for attempt in _open(state, max_tries):
        if attempt.planned.task in state.broken:
            continue
        p = attempt.planned
        todo.append(
            AttemptPlan(
                key=attempt.key,
                task=p.task,
                arm=p.arm,
                agent=p.agent,
                repeat=p.repeat,
                order=p.order,
                try_no=attempt.next_try,
                reuse_candidate=attempt.reusable_candidate(),
            )
        )
    return todo


def _open(state: RunState, max_tries: int) -> list[AttemptState]:
    """Attempts with neither a final score nor every try spent, in planned order."""
    return [
        a
        for a in sorted(state.attempts.values(), key=lambda a: a.planned.order)
        if a.score is None and a.spent < max_tries
    ]


def blocked(state: RunState, *, max_tries: int) -> list[AttemptState]:
    """Attempts left to run that wait on a task that failed itself (``state.broken``)."""
    return [a for a in _open(state, max_tries) if a.planned.task in state.broken]


def is_complete(state: RunState, *, max_tries: int) -> bool:
    """True when no attempt is left to run, none waiting on a broken task included."""
    return bool(state.attempts) and not _open(state, max_tries)
