"""The ``noop`` agent: submits the starting sources unchanged (the A/A control)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from aka.agent import (
    AgentItem,
    AgentOptions,
    AgentOutcome,
    AgentRequest,
    AgentSink,
    register_agent,
)


class NoopOptions(AgentOptions):
    """The noop agent's one option."""

    control: bool = Field(
        default=False,
        description="judge the unchanged sources as the baseline is, so a torch-to-kernel "
        "task gives an A/A row (docs/authoring.md)",
    )


@register_agent("noop")
class NoopAgent:
    """Does nothing, so its score measures the baseline against itself."""

    name = "noop"
    Options: ClassVar[type[NoopOptions]] = NoopOptions

    def run(self, request: AgentRequest, sink: AgentSink) -> AgentOutcome:
        """Leave the workspace as it is."""
        sink.emit(AgentItem(kind="log", text="noop: submitting the starting sources unchanged"))
        return AgentOutcome(
            status="ok", exit_code=0, model=None, tokens_in=0, tokens_out=0, cost_usd=0.0
        )
