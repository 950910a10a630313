"""What a trainer's candidate carries into the evaluator and what it gets back.

:class:`Sample` is where a candidate came from in a trainer (recorded with its attempt);
:class:`EvalResult` is the reward and the records behind it. Both are re-exported by
:mod:`aka.api`, which scores candidates with them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from aka import events as ev
from aka.attempt import ITEM_TEXT_CAP

if TYPE_CHECKING:
    from aka.recorder import AttemptRecorder

__all__ = ["EvalResult", "Sample", "record_sample"]


class Sample(BaseModel):
    """Where a candidate came from in a trainer: recorded with its attempt.

    The prompt and the model's message are stored as the attempt's agent events (the
    prompt as ``AgentStarted.prompt``, the message as an ``AgentOutput`` item and as the
    ``AgentFinished`` transcript), so ``aka export rewards`` and ``aka audit`` show what
    the policy was asked and what it said, next to what was evaluated.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    trainer: str = Field(description="The trainer that asked (trl, verl, skyrl, ...).")
    trainer_run: str | None = Field(default=None, description="The trainer's own run name.")
    step: int | None = Field(default=None, ge=0, description="Policy (global) step.")
    index: int | None = Field(default=None, ge=0, description="Sample index within the step.")
    row: int | None = Field(default=None, ge=0, description="Dataset row the prompt came from.")
    episode: str | None = Field(default=None, description="Multi-turn episode id.")
    turn: int | None = Field(default=None, ge=0, description="Turn within the episode.")
    prompt: str = Field(default="", description="The prompt text the policy saw.")
    message: str = Field(default="", description="The model's whole response.")

    @field_validator("trainer", "trainer_run", "episode", "prompt", "message")
    @classmethod
    def _storable(cls, value: str | None) -> str | None:
        """Lone surrogates (``"\\ud800"`` in a JSON request) written as escapes: the ledger
        stores UTF-8, and one sample's text must not fail the batch it came in (the response
        itself is refused as not Unicode text: :func:`aka.integrations.parse_response`)."""
        if value is None:
            return None
        return value.encode("utf-8", "backslashreplace").decode("utf-8")

    def data(self) -> str:
        """The provenance fields as JSON (an ``AgentOutput`` item's ``data``)."""
        return json.dumps(
            self.model_dump(exclude={"prompt", "message"}, exclude_none=True), sort_keys=True
        )


@dataclass(frozen=True)
class EvalResult:
    """What a trainer needs back: the reward and where it came from."""

    run_id: str
    attempt_key: str
    eval_id: str
    candidate: str
    compiled: bool
    correct: bool
    speedup: float | None
    reward: float
    components: dict[str, float]
    hack_flags: list[str]
    error: str | None
    feedback: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return asdict(self)


def record_sample(rec: AttemptRecorder, arm: str, sample: Sample | None) -> None:
    """The trainer's prompt and the model's message, as the attempt's agent events
    (``arm``: the blob of the arm the service run records its attempts under)."""
    if sample is None:
        return
    cas = rec.ledger.cas
    rec.emit(
        ev.AgentStarted(
            try_no=1,
            agent=sample.trainer,
            arm=arm,
            prompt=cas.put(sample.prompt.encode()),
            timeout_seconds=0.0,
        )
    )
    item = ev.AgentItemRecord(
        kind="message", text=sample.message[:ITEM_TEXT_CAP], data=sample.data()
    )
    rec.emit(ev.AgentOutput(try_no=1, items=[item]))
    rec.emit(
        ev.AgentFinished(
            try_no=1, status="ok", wall_s=0.0, transcript=cas.put(sample.message.encode())
        )
    )
