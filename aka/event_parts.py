"""The records events nest: parts of an event, never appended on their own.

An agent's stream item (``AgentOutput.items``), one correctness case
(``CorrectnessChecked.cases``), one shape's interleaved timing (``KernelTimed.shapes``)
and one check of a task validation (``TaskValidated.checks``). Frozen, unknown keys
rejected, like the events; :mod:`aka.events` re-exports them, so ``ev.CaseResult`` is
where callers name them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Digest = str


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AgentItemRecord(_Part):
    """One structured item of an agent's stream."""

    kind: str = Field(
        description="message, thinking, tool_call, tool_result, file_edit, usage, log, error."
    )
    text: str = Field(default="", description="Text of the item (truncated to a cap).")
    data: str = Field(default="{}", description="JSON object with the item's structured fields.")


class CaseResult(_Part):
    """Correctness of one (shape, dtype, seed) trial."""

    shape: dict[str, int] = Field(description="Problem size.")
    dtype: str = Field(description="Input dtype.")
    seed: int = Field(description="Input seed.")
    ok: bool = Field(description="Within tolerance of the reference.")
    max_abs_err: float | None = Field(default=None, description="Max |candidate - reference|.")
    error: str | None = Field(default=None, description="Why it failed, if it did.")
    heldout: bool = Field(
        default=False,
        description="One of the task's held-out shapes, checked in a scored evaluation of "
        "its tuning shapes: never timed, never named to the policy. False in events recorded "
        "before it existed and in held-out re-evaluations (every case there is held out).",
    )
    excused: bool = Field(
        default=False,
        description="A failed input-variant case (an imported task's stress case) that the "
        "task's own code, judged on the same inputs on this device, fails too: not counted.",
    )


class ShapeTiming(_Part):
    """Interleaved timing of baseline and candidate on one shape."""

    shape: dict[str, int] = Field(description="Problem size.")
    dtype: str = Field(description="Dtype timed.")
    baseline_s: float = Field(description="Baseline median, seconds.")
    candidate_s: float = Field(description="Candidate median, seconds.")
    baseline_ci: tuple[float, float] = Field(description="CI of the baseline median.")
    candidate_ci: tuple[float, float] = Field(description="CI of the candidate median.")
    speedup: float = Field(description="baseline median / candidate median.")
    speedup_ci: tuple[float, float] = Field(description="Bootstrap CI of the speedup.")
    samples: int = Field(description="Samples per arm.")
    method: str = Field(description="How it was timed (engine, timer, flush, stop rule).")
    raw: Digest | None = Field(default=None, description="Blob of the raw samples (JSON).")


class CheckResult(_Part):
    """One check of a task validation."""

    name: str = Field(description="Check name (e.g. null_zeros, baseline_passes).")
    status: Literal["pass", "fail", "skip", "warn"] = Field(description="Outcome.")
    detail: str = Field(default="", description="Why, for people.")
    review: bool = Field(
        default=False, description="True for an agent's opinion (not a deterministic check)."
    )
