"""The options every process-running agent takes (an arm's ``options:``, docs/agents.md).

Each agent module declares its own model; the ones that run a program start from
:class:`ProcessOptions` (environment and output limits) and those that run a known CLI
from :class:`CliOptions` (plus where the program is and more arguments). The run-time
readers in ``aka_agents._process`` take the same keys, so a config that passes these
models at run start does not fail on them half-way through an attempt.
"""

from __future__ import annotations

from pydantic import Field

from aka.agent import AgentOptions

MiB = 1 << 20


class ProcessOptions(AgentOptions):
    """Options of an agent that runs a program: its environment and output limits."""

    env: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        description="more environment variables for the agent process (NAME: value)",
    )
    max_transcript_bytes: int = Field(
        default=64 * MiB, gt=0, description="stdout kept verbatim (bytes, default 64 MiB)"
    )
    max_line_bytes: int = Field(
        default=4 * MiB, gt=0, description="longest stdout line kept (bytes, default 4 MiB)"
    )
    kill_grace_seconds: float = Field(
        default=5.0, ge=0, description="SIGTERM to SIGKILL delay at the timeout (seconds)"
    )
    contain: bool = Field(
        default=True,
        description="run in own PID and mount namespaces with the ledger and run keys hidden "
        "(docs/security.md)",
    )


class CliOptions(ProcessOptions):
    """Options of an agent that runs a known CLI (Claude Code, Codex, Cursor, mini-swe-agent)."""

    executable: str | None = Field(
        default=None, description="path of the CLI instead of a PATH lookup"
    )
    args: list[str] = Field(
        default_factory=list, description="more arguments (a list of strings), before the prompt"
    )
