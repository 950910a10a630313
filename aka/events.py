"""The arena's event vocabulary: one frozen model per event type, all in one module.

The records an event nests (an agent item, a correctness case, a shape's timing, a
check) are in :mod:`aka.event_parts`, and how old versions are read in
:mod:`aka.event_upcasts`; both are reached through this module.

Every step of an attempt is one of these, appended to the ledger. Names are past tense;
``*Started`` events are *intents* written before a side effect that cannot be repeated
for free (an agent run, a GPU measurement) and closed by a result event. On resume, an
intent without its result marks a failed try.

Durability is declared here, once per type (``durable = True``): intents, results and
the run's own records are on stable storage when their append returns; progress
(``WorkspaceMaterialized``, ``AgentOutput``, the evaluation's ``Compiled``,
``CorrectnessChecked`` and ``KernelTimed``, closed by a durable ``Scored``) is not, and
a crash may lose the last of it, never a decision. No appending code passes
``durable=``.

Artifacts are digests (``b3:...``), never paths. Bump a model's ``schema_version`` when
its fields change and add an upcaster to :mod:`aka.event_upcasts` (registered in
:data:`REGISTRY` below).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from aka.event_parts import AgentItemRecord, CaseResult, CheckResult, ShapeTiming
from aka.event_upcasts import UPCASTERS
from aka_ledger import EventModel, EventRegistry

Digest = str
Purpose = Literal["final", "self", "heldout", "validate"]
"""Why an evaluation ran (``EvaluationStarted.purpose``, ``Scored.purpose``)."""
HeldoutRole = Literal["candidate", "baseline"]
"""What a held-out evaluation measured (``HeldoutEvaluated.role``)."""


class RunStarted(EventModel):
    """A run began (or was registered before its first attempt)."""

    durable = True
    type: Literal["RunStarted"] = "RunStarted"
    label: str = Field(description="Human label of the run (from config or --label).")
    config: Digest = Field(description="Blob of the resolved run config (JSON).")
    config_path: str = Field(description="Where the config was read from, for people.")
    tasks: dict[str, Digest] = Field(description="Task key -> tree digest of the task folder.")
    arms: dict[str, Digest] = Field(description="Arm name -> blob of the resolved arm (JSON).")
    device: str = Field(description="Device the run evaluates on: 'cpu' or 'cuda[:N]'.")
    environment: Digest = Field(description="Blob of the environment fingerprint (JSON).")
    harness: Digest = Field(description="Tree digest of the evaluator's own code.")
    policy: str = Field(description="Scoring policy name.")
    aka_version: str = Field(description="aka version that started the run.")
    writers: dict[str, tuple[int, str]] = Field(
        default_factory=dict,
        description="Every ledger writer seen as the run started -> [last seq, head over its "
        "event ids] (its high-water mark): `aka ledger verify` names a writer whose tail or "
        "whole files were deleted since.",
    )

    schema_version = 2


class AttemptPlanned(EventModel):
    """The planner's output: one attempt of one arm on one task (pure, no side effect)."""

    durable = True
    type: Literal["AttemptPlanned"] = "AttemptPlanned"
    task: str = Field(description="Task key (path under tasks/).")
    arm: str = Field(description="Arm name.")
    agent: str = Field(description="Agent name of the arm.")
    repeat: int = Field(ge=0, description="Repeat index, 0-based.")
    order: int = Field(ge=0, description="Position in the run's interleaved order.")


class AttemptStarted(EventModel):
    """A try of an attempt began on a worker."""

    durable = True
    type: Literal["AttemptStarted"] = "AttemptStarted"
    try_no: int = Field(ge=1, description="Try number: 1 first; a retry after a crash is 2, ...")
    worker: str = Field(description="Worker id (node/device/process).")


class WorkspaceMaterialized(EventModel):
    """The agent's workspace was built from the content store."""

    type: Literal["WorkspaceMaterialized"] = "WorkspaceMaterialized"
    try_no: int = Field(ge=1, description="Try this belongs to.")
    tree: Digest = Field(description="Tree digest of the starting workspace.")
    task: Digest = Field(description="Tree digest of the task folder it came from.")


class AgentStarted(EventModel):
    """Intent: an agent is about to run (a side effect that costs tokens and time)."""

    durable = True
    type: Literal["AgentStarted"] = "AgentStarted"
    try_no: int = Field(ge=1, description="Try this belongs to.")
    agent: str = Field(description="Agent name.")
    arm: Digest = Field(description="Blob of the resolved arm.")
    prompt: Digest = Field(description="Blob of the exact prompt text.")
    timeout_seconds: float = Field(description="Budget the agent was given.")


class AgentOutput(EventModel):
    """A batch of structured output from a running agent."""

    type: Literal["AgentOutput"] = "AgentOutput"
    try_no: int = Field(ge=1, description="Try this belongs to.")
    items: list[AgentItemRecord] = Field(description="Items in stream order.")


class AgentFinished(EventModel):
    """Result: the agent run ended."""

    durable = True
    type: Literal["AgentFinished"] = "AgentFinished"
    try_no: int = Field(ge=1, description="Try this belongs to.")
    status: Literal["ok", "timeout", "error"] = Field(description="How the agent ended.")
    exit_code: int | None = Field(default=None, description="Process exit code, if a process.")
    model: str | None = Field(default=None, description="Model reported by the agent.")
    tokens_in: int | None = Field(default=None, description="Input tokens, if reported.")
    tokens_out: int | None = Field(default=None, description="Output tokens, if reported.")
    cost_usd: float | None = Field(default=None, description="Cost in USD, if reported.")
    wall_s: float = Field(description="Wall time of the agent run, seconds.")
    transcript: Digest | None = Field(default=None, description="Blob of the raw transcript.")
    error: str | None = Field(default=None, description="Error summary, if any.")


class CandidateCaptured(EventModel):
    """The patch produced: the workspace after the agent, as a tree and a diff."""

    durable = True
    type: Literal["CandidateCaptured"] = "CandidateCaptured"
    try_no: int = Field(ge=1, description="Try this belongs to.")
    tree: Digest = Field(description="Tree digest of the editable files after the agent.")
    diff: Digest = Field(description="Blob of the unified diff against the start.")
    changed: list[str] = Field(description="Editable paths whose content changed.")
    reused_from: int | None = Field(
        default=None, description="Try whose candidate this reuses (resume after a crash)."
    )


class EvaluationStarted(EventModel):
    """Intent: the evaluator is about to measure a candidate."""

    durable = True
    type: Literal["EvaluationStarted"] = "EvaluationStarted"
    try_no: int = Field(ge=0, description="Try this belongs to (0 outside attempts).")
    eval_id: str = Field(description="Unique id of this evaluation.")
    purpose: Purpose = Field(
        description="'final' scores the attempt; 'self' is the agent's own check; 'heldout' "
        "re-evaluates on held-out shapes; 'validate' checks a task. Only 'final' is a score."
    )
    turn: int = Field(default=0, ge=0, description="Self-evaluation number within the try.")
    candidate: Digest = Field(description="Tree digest of the candidate's editable files.")
    task: Digest = Field(description="Tree digest of the task folder.")
    harness: Digest = Field(description="Tree digest of the evaluator code.")
    device: str = Field(description="Device evaluated on.")


class Compiled(EventModel):
    """The candidate was imported/compiled (first launch for JIT kernels)."""

    type: Literal["Compiled"] = "Compiled"
    eval_id: str = Field(description="Evaluation this belongs to.")
    ok: bool = Field(description="Whether it compiled and launched.")
    error: str | None = Field(default=None, description="First error lines, if it failed.")
    wall_s: float = Field(description="Seconds spent compiling.")


class CorrectnessChecked(EventModel):
    """The candidate's outputs were compared with the reference."""

    type: Literal["CorrectnessChecked"] = "CorrectnessChecked"
    eval_id: str = Field(description="Evaluation this belongs to.")
    ok: bool = Field(description="Every case within tolerance and no hack flag.")
    cases: list[CaseResult] = Field(description="One result per trial.")
    hack_flags: list[str] = Field(default_factory=list, description="Detector names that fired.")
    evidence: list[str] = Field(
        default_factory=list, description="Evidence per flag (file:line ...)."
    )
    heldout_failed: bool = Field(
        default=False,
        description="The held-out check of a correct candidate failed (its cases, flags or "
        "process; kept for an audit, never told to the policy). False in events recorded "
        "before it existed.",
    )


class KernelTimed(EventModel):
    """Baseline and candidate were timed, interleaved, in one process."""

    type: Literal["KernelTimed"] = "KernelTimed"
    eval_id: str = Field(description="Evaluation this belongs to.")
    shapes: list[ShapeTiming] = Field(description="One entry per timed shape.")
    device: Digest = Field(description="Blob of the device fingerprint (JSON).")
    device_kind: Digest | None = Field(
        default=None,
        description="Blob of the fingerprint without the card's UUID and index (the kind of "
        "device; arms are compared on it). None in events recorded before it existed.",
    )


class Scored(EventModel):
    """Result: an evaluation's score, with every component kept for reshaping rewards.

    Version 2 added ``policy_spec``; a version 1 event is upcast with the spec of the
    version 1 policy it was scored under, so its stored score can be recomputed.
    """

    schema_version = 2
    durable = True
    type: Literal["Scored"] = "Scored"
    eval_id: str = Field(description="Evaluation this closes.")
    try_no: int = Field(ge=0, description="Try this belongs to.")
    purpose: Purpose = Field(description="Only 'final' is the attempt's score.")
    compiled: bool = Field(description="The candidate compiled and launched.")
    correct: bool = Field(description="Every correctness case passed and no hack flag fired.")
    speedup: float | None = Field(description="Geometric mean of per-shape speedups, if correct.")
    score: float = Field(description="The policy's score.")
    policy: str = Field(description="Scoring policy name.")
    policy_version: int = Field(description="Scoring policy version.")
    policy_spec: str = Field(
        description="The full policy as canonical JSON (aka.scoring.RewardPolicy.to_json): "
        "aka.scoring.shape_reward(components, policy_spec) gives the score back."
    )
    components: dict[str, float] = Field(description="Every number the score was made from.")
    hack_flags: list[str] = Field(default_factory=list, description="Detectors that fired.")
    evidence: list[str] = Field(
        default_factory=list, description="Evidence per flag ('flag: file:line ...')."
    )
    network: str = Field(
        default="unknown", description="Whether the candidate process ran without network."
    )
    error: str | None = Field(default=None, description="Why it failed, if it did.")


class AttemptFinished(EventModel):
    """A try ended, and who ended it.

    Version 2 added the statuses ``task`` and ``infra``, tries that are not charged to
    the attempt (a version 1 event is read unchanged).
    """

    schema_version = 2
    durable = True
    type: Literal["AttemptFinished"] = "AttemptFinished"
    try_no: int = Field(ge=1, description="Try that ended.")
    status: Literal["scored", "error", "task", "infra"] = Field(
        description="'scored': a final Scored exists; 'error': the try failed (the agent or "
        "its evaluation crashed), a spent try; 'task': the task itself failed (its folder, "
        "reference or baseline), not charged, retried once the task is fixed; 'infra': the "
        "machine failed (a full disk, an unwritable ledger), not charged, retried on resume."
    )
    error: str | None = Field(default=None, description="Why, for every status but 'scored'.")


class TaskRefreshed(EventModel):
    """A task that failed during the run was fixed on disk; later tries use its new tree.

    Recorded by ``aka resume`` for a task whose attempts wait on a ``task`` failure when
    the folder's tree differs from the run's; every evaluation names the tree it used.
    """

    durable = True
    type: Literal["TaskRefreshed"] = "TaskRefreshed"
    task: str = Field(description="Task key.")
    tree: Digest = Field(description="Tree digest of the fixed task folder.")
    previous: Digest = Field(description="Tree digest the run used until now.")


class RunFinished(EventModel):
    """Every planned attempt has a result (or exhausted its tries)."""

    durable = True
    type: Literal["RunFinished"] = "RunFinished"
    attempts: int = Field(description="Planned attempts.")
    scored: int = Field(description="Attempts with a final score.")


class HeldoutEvaluated(EventModel):
    """A held-out re-evaluation finished; links it to what it re-evaluated.

    The evaluation itself is an ordinary ``EvaluationStarted``/``Scored`` chain with
    purpose ``heldout`` (never an attempt's score). The envelope's attempt key is the
    attempt's for a candidate and empty for a task's baseline.
    """

    durable = True
    type: Literal["HeldoutEvaluated"] = "HeldoutEvaluated"
    task: str = Field(description="Task key.")
    role: HeldoutRole = Field(
        description="'candidate': an attempt's final candidate; 'baseline': the starting sources."
    )
    eval_id: str = Field(description="The held-out evaluation (purpose 'heldout').")
    tuning_eval_id: str | None = Field(
        default=None, description="The attempt's final evaluation on tuning shapes (candidates)."
    )
    candidate: Digest = Field(description="Tree digest evaluated.")
    task_tree: Digest = Field(description="Tree digest of the task folder.")
    device: str = Field(description="Device evaluated on.")
    shapes: list[dict[str, int]] = Field(description="The held-out shapes used.")


class TaskValidated(EventModel):
    """A task folder was validated (``aka tasks validate``)."""

    durable = True
    type: Literal["TaskValidated"] = "TaskValidated"
    task: str = Field(description="Task key.")
    task_tree: Digest | None = Field(
        default=None, description="Tree digest of the task folder (None if it did not load)."
    )
    device: str = Field(description="Device the evaluator checks ran on.")
    ok: bool = Field(description="No deterministic check failed.")
    checks: list[CheckResult] = Field(description="Every check, in order.")
    eval_ids: list[str] = Field(
        default_factory=list, description="Evaluations run (purpose 'validate')."
    )


class MemorySnapshotted(EventModel):
    """An arm's memory directory, as a tree, before or after an agent run.

    ``before`` is what the agent found (restored from the latest ``after`` with the same
    key); ``after`` is what it left, which the next attempt in planned order starts from.
    """

    durable = True
    type: Literal["MemorySnapshotted"] = "MemorySnapshotted"
    try_no: int = Field(ge=1, description="Try this belongs to.")
    phase: Literal["before", "after"] = Field(description="Before or after the agent ran.")
    key: str = Field(description="Memory key (attempts sharing a key share the memory).")
    path: str = Field(description="Directory in the workspace, e.g. '.memory'.")
    tree: Digest = Field(description="Tree digest of the memory directory.")
    source_run: str | None = Field(
        default=None, description="Run of the 'after' snapshot restored (before only)."
    )
    source_attempt: str | None = Field(
        default=None, description="Attempt of the 'after' snapshot restored (before only)."
    )


REGISTRY = EventRegistry(
    [
        RunStarted,
        AttemptPlanned,
        AttemptStarted,
        WorkspaceMaterialized,
        AgentStarted,
        AgentOutput,
        AgentFinished,
        CandidateCaptured,
        EvaluationStarted,
        Compiled,
        CorrectnessChecked,
        KernelTimed,
        Scored,
        AttemptFinished,
        TaskRefreshed,
        RunFinished,
        HeldoutEvaluated,
        TaskValidated,
        MemorySnapshotted,
    ]
)
"""Every arena event type; pass it to :meth:`aka_ledger.Ledger.open`."""

for (_tag, _version), _upcast in UPCASTERS.items():
    REGISTRY.upcaster(_tag, _version)(_upcast)
