"""The agent protocol: run in a workspace with a prompt and a budget, stream structured output.

An agent is anything that edits files in a directory. The orchestrator hands it an
:class:`AgentRequest`, receives :class:`AgentItem` values through an :class:`AgentSink`
while it works (turned into ``AgentOutput`` events), and records the returned
:class:`AgentOutcome`. The agent never sees the ledger; what it changed is captured
afterwards by snapshotting the workspace, so an agent cannot claim a result.

Agents register with :func:`register_agent` (built-ins) or through the ``aka.agents``
entry-point group (third parties), so adding one touches one file. Each declares the
options an arm may give it as an :class:`AgentOptions` model (its ``Options`` attribute);
:func:`check_options` holds an arm's ``options:`` to it at run start, so a misspelt key is
refused before anything is recorded instead of being ignored by the agent.
"""

from __future__ import annotations

import importlib.metadata
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, ValidationError

from aka.errors import InputError

ItemKind = Literal[
    "message", "thinking", "tool_call", "tool_result", "file_edit", "usage", "log", "error"
]


@dataclass(frozen=True)
class McpServer:
    """A stdio MCP server an arm gives its agent; each CLI adapter writes its own format."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


class AgentOptions(BaseModel):
    """Base of an agent's options model: the keys an arm's ``options:`` may hold.

    Unknown keys are rejected and the model is frozen. An agent without an ``Options``
    attribute takes none (this base, which has no fields).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class AgentSettings:
    """Per-arm knobs every agent understands; agent-specific ones go in ``options``.

    ``options`` is the arm's ``options:`` mapping, checked against the agent's
    :class:`AgentOptions` model when the run starts (:func:`check_options`).

    ``mcp_servers``, ``allowed_tools`` and ``disallowed_tools`` reach only agents that
    declare them in a ``treatments`` attribute; the run is refused before any work
    otherwise (see :mod:`aka.treatments`).
    """

    model: str | None = None
    effort: str | None = None
    max_iterations: int | None = None
    timeout_seconds: float = 1800.0
    options: Mapping[str, Any] = field(default_factory=dict)
    mcp_servers: Mapping[str, McpServer] = field(default_factory=dict)
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()

    @property
    def extra(self) -> Mapping[str, Any]:
        """Deprecated: the old name of :attr:`options` (kept for agents written against it)."""
        warnings.warn(
            "AgentSettings.extra is deprecated; read AgentSettings.options (the arm's options:)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.options


@dataclass(frozen=True)
class AgentRequest:
    """Everything an agent gets. Deliberately excludes the ledger's location.

    Attributes:
        workspace: directory holding the task's starting sources; the agent edits here.
        prompt: the full prompt text (also stored as a blob by the orchestrator).
        settings: the arm's resolved settings.
        editable: workspace-relative paths the evaluator will take from the candidate.
        targets: symbols the task asks the agent to optimize.
        env: extra environment variables for the agent process.
        eval_command: argv that scores the workspace's current candidate (self-evaluation);
            its results are recorded as intermediate events and never as the final score.
        task_name: the task's name, for logs.
        entry_file: the editable file holding the entry point.
        tunables: module-level integer constants of the entry file a search may vary,
            with the values to try (from the task spec).
        memory_dir: the arm's memory directory inside the workspace, when it has one.
        hidden: paths the agent's processes must not see (the ledger, the run key
            directory): CLI agents run in their own mount and PID namespaces with these
            covered, where the kernel allows (docs/security.md).
    """

    workspace: Path
    prompt: str
    settings: AgentSettings
    editable: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    eval_command: tuple[str, ...] = ()
    task_name: str = ""
    entry_file: str = ""
    tunables: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    memory_dir: Path | None = None
    hidden: tuple[Path, ...] = ()


@dataclass(frozen=True)
class AgentItem:
    """One structured piece of an agent's stream (a message, a tool call, usage, ...)."""

    kind: ItemKind
    text: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)


class AgentSink(Protocol):
    """Receives an agent's structured output as it happens."""

    def emit(self, item: AgentItem) -> None:
        """Record one item; must be cheap and must not raise."""


@dataclass(frozen=True)
class AgentOutcome:
    """What an agent run ended with. Token counts and cost are None when unknown."""

    status: Literal["ok", "timeout", "error"]
    exit_code: int | None = None
    model: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    transcript: bytes = b""
    error: str | None = None
    version: str | None = None
    truncated: bool = False  # the transcript was capped or over-long lines were cut


@runtime_checkable
class Agent(Protocol):
    """The one protocol every agent implements.

    An agent that takes options also sets ``Options`` (a subclass of
    :class:`AgentOptions`); it is optional, so it is not a member of the protocol.
    """

    name: ClassVar[str]

    def run(self, request: AgentRequest, sink: AgentSink) -> AgentOutcome:
        """Work in ``request.workspace`` until done or out of budget."""
        ...


AgentFactory = Callable[[], Agent]
_REGISTRY: dict[str, AgentFactory] = {}


def register_agent(name: str) -> Callable[[type], type]:
    """Class decorator registering an agent under ``name``."""

    def deco(cls: type) -> type:
        cls.name = name  # type: ignore[attr-defined]
        _REGISTRY[name] = cls
        return cls

    return deco


def unregister_agent(name: str) -> None:
    """Remove agent ``name`` (one a test or a plugin registered for a while); absent: no-op."""
    _REGISTRY.pop(name, None)


def _load_entry_points() -> None:
    for ep in importlib.metadata.entry_points(group="aka.agents"):
        if ep.name not in _REGISTRY:
            ep.load()  # importing the module runs its @register_agent


def agent_names() -> list[str]:
    """Names of every agent: built-ins plus entry points."""
    _load_entry_points()
    return sorted(_REGISTRY)


def get_agent(name: str, *, where: str | None = None) -> Agent:
    """Instantiate the agent called ``name``.

    Raises:
        InputError: no such agent (the message lists the known ones).
    """
    _load_entry_points()
    factory = _REGISTRY.get(name)
    if factory is None:
        raise InputError(
            f"unknown agent {name!r}",
            where=where,
            fix=f"use one of: {', '.join(sorted(_REGISTRY)) or '(none installed)'}",
        )
    return factory()


def options_model(agent: object) -> type[AgentOptions]:
    """The options model ``agent`` (an instance or its class) declares; none: no options."""
    model = getattr(agent, "Options", AgentOptions)
    if not (isinstance(model, type) and issubclass(model, AgentOptions)):
        raise TypeError(f"{agent!r}: Options must be a subclass of aka.agent.AgentOptions")
    return model


def check_options(name: str, options: Mapping[str, Any], *, where: str) -> AgentOptions:
    """An arm's ``options:`` checked against agent ``name``'s model.

    Args:
        name: the agent's registered name.
        options: the arm's options, as read from the config.
        where: the config and the arm, for messages (``field 'options.KEY'`` is added).

    Raises:
        InputError: an unknown agent; keys the agent does not take (the message names
            the agent, every such key and the keys it takes); a value of the wrong type.
    """
    model = options_model(get_agent(name, where=f"{where}, field 'agent'"))
    try:
        return model.model_validate(dict(options))
    except ValidationError as exc:
        raise _options_error(name, model, exc, where) from None


def _options_error(
    name: str, model: type[AgentOptions], exc: ValidationError, where: str
) -> InputError:
    """One message for pydantic's errors: every unknown key at once, else the first."""
    allowed = sorted(model.model_fields)
    takes = f"it takes {', '.join(allowed)}" if allowed else "it takes no options"
    errors = exc.errors()
    unknown = [str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden"]
    if unknown:
        keys = ", ".join(repr(k) for k in unknown)
        return InputError(
            f"agent {name!r} has no option {keys}",
            where=f"{where}, field 'options.{unknown[0]}'",
            fix=f"remove or rename it: {takes} (see docs/agents.md)",
        )
    first = errors[0]
    if not first["loc"]:  # a check across keys
        return InputError(
            f"agent {name!r}: {first['msg'].removeprefix('Value error, ')}",
            where=f"{where}, field 'options'",
            fix=f"{takes} (see docs/agents.md)",
        )
    key = ".".join(str(p) for p in first["loc"])
    described = model.model_fields.get(str(first["loc"][0]))
    what = described.description if described is not None and described.description else ""
    if first["type"] == "missing":
        message = f"agent {name!r} needs option {key!r}"
    else:
        message = (
            f"agent {name!r} option {key!r}: {first['msg'].removeprefix('Value error, ')} "
            f"(got {first.get('input')!r})"
        )
    return InputError(
        message,
        where=f"{where}, field 'options.{key}'",
        fix=(f"{first['loc'][0]}: {what}" if what else takes) + " (see docs/agents.md)",
    )
