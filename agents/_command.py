"""Any program as an agent: a templated command line, stdout parsed as JSON lines or kept as log.

This is how DeepSeek Harness, GEAK or a custom agent plugs in without code. The arm sets::

    options:
      command: ["my-agent", "--prompt-file", "{prompt_file}", "--dir", "{workspace}", "--model", "{model}"]
      stream_format: lines        # or claude | codex | cursor, to reuse those parsers
      version_command: ["my-agent", "--version"]   # optional

Placeholders: ``{prompt_file}`` (the prompt, written to a file outside the workspace),
``{workspace}``, ``{model}``, ``{effort}``, ``{max_iterations}``, ``{timeout_seconds}``,
``{mcp_config}`` (a file beside the prompt with the arm's MCP servers as
``{"mcpServers": {...}}``), ``{allowed_tools}`` and ``{disallowed_tools}`` (comma-separated);
an unset setting becomes an empty string. The program runs in the workspace. An arm may
set MCP servers or tool lists only if the command uses the matching placeholder.

In the ``lines`` format each stdout line that is a JSON object with a ``kind`` (an item
kind) becomes that item; ``{"kind": "usage", "data": {"tokens_in": .., "tokens_out": ..,
"cost_usd": .., "model": ..}}`` feeds the outcome; any other line is kept as a log item.
"""

from __future__ import annotations

import json
import os
import string
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, field_validator

from aka.agent import AgentOutcome, AgentRequest, AgentSettings, AgentSink, register_agent
from aka.errors import InputError
from aka.treatments import mcp_config
from aka_agents._options import ProcessOptions
from aka_agents._parsers import PARSERS
from aka_agents._process import AgentCheck, agent_env, extra_args, first_line, run_cli

FIELDS = (
    "prompt_file",
    "workspace",
    "model",
    "effort",
    "max_iterations",
    "timeout_seconds",
    "mcp_config",
    "allowed_tools",
    "disallowed_tools",
)
_TREATMENT_FIELDS = {
    "mcp_config": "mcp_servers",
    "allowed_tools": "allowed_tools",
    "disallowed_tools": "disallowed_tools",
}
_FIX = 'set options.command to a list of strings, e.g. ["my-agent", "{prompt_file}"]'


def _template(options: Any) -> list[str]:
    command = options.get("command")
    if (
        not isinstance(command, list | tuple)
        or not command
        or not all(isinstance(a, str) for a in command)
    ):
        raise InputError(
            "the command agent needs a non-empty list of strings",
            where="options.command",
            fix=_FIX,
        )
    for arg in command:
        problem = _placeholder_problem(arg)
        if problem:
            raise InputError(problem, where="options.command", fix=_PLACEHOLDERS)
    return list(command)


_PLACEHOLDERS = f"use only {', '.join('{' + f + '}' for f in FIELDS)} (double braces for a literal)"


def _placeholder_problem(arg: str) -> str | None:
    """What is wrong with one argument's placeholders, or None."""
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(arg)]
    except ValueError as exc:  # a lone brace
        return f"{arg!r}: {exc}"
    for name in names:
        if name is not None and name not in FIELDS:
            return f"unknown placeholder {{{name}}} in {arg!r}"
    return None


class CommandOptions(ProcessOptions):
    """The command agent's options: the program, its output format, its version probe."""

    command: list[str] = Field(
        min_length=1,
        description='the program and its arguments, e.g. ["my-agent", "{prompt_file}"]',
    )
    stream_format: str = Field(
        default="lines", description=f"how stdout is parsed: one of {', '.join(PARSERS)}"
    )
    version_command: list[str] | None = Field(
        default=None, description='a command printing the version, e.g. ["my-agent", "--version"]'
    )

    @field_validator("command")
    @classmethod
    def _placeholders(cls, command: list[str]) -> list[str]:
        for arg in command:
            problem = _placeholder_problem(arg)
            if problem:
                raise ValueError(f"{problem}; {_PLACEHOLDERS}")
        return command

    @field_validator("stream_format")
    @classmethod
    def _format(cls, fmt: str) -> str:
        if fmt not in PARSERS:
            raise ValueError(f"unknown stream_format {fmt!r}; use one of: {', '.join(PARSERS)}")
        return fmt


def command_argv(
    request: AgentRequest, prompt_file: Path, mcp_file: Path | None = None
) -> list[str]:
    """The program's argv with every placeholder filled.

    Raises:
        InputError: ``options.command`` is missing, not a list of strings, or uses an
            unknown placeholder.
    """
    s = request.settings
    values = {
        "prompt_file": str(prompt_file),
        "workspace": str(request.workspace),
        "model": s.model or "",
        "effort": s.effort or "",
        "max_iterations": "" if s.max_iterations is None else str(s.max_iterations),
        "timeout_seconds": f"{s.timeout_seconds:g}",
        "mcp_config": "" if mcp_file is None else str(mcp_file),
        "allowed_tools": ",".join(s.allowed_tools),
        "disallowed_tools": ",".join(s.disallowed_tools),
    }
    return [arg.format_map(values) for arg in _template(s.options)]


@register_agent("command")
class CommandAgent:
    """Runs the program named in ``options.command``."""

    name: ClassVar[str] = "command"
    Options: ClassVar[type[CommandOptions]] = CommandOptions

    def treatments_for(self, settings: AgentSettings) -> frozenset[str]:
        """MCP servers and tool lists, when the command has a placeholder for them.

        Raises:
            InputError: ``options.command`` is missing or malformed.
        """
        used = {
            name
            for arg in _template(settings.options)
            for _, name, _, _ in string.Formatter().parse(arg)
            if name is not None
        }
        return frozenset(t for f, t in _TREATMENT_FIELDS.items() if f in used)

    def run(self, request: AgentRequest, sink: AgentSink) -> AgentOutcome:
        """Write the prompt to a file, run the command in the workspace, parse its stdout."""
        options = request.settings.options
        fmt = str(options.get("stream_format", "lines"))
        if fmt not in PARSERS:
            raise InputError(
                f"unknown stream_format {fmt!r}",
                where="options.stream_format",
                fix=f"use one of: {', '.join(PARSERS)}",
            )
        env = agent_env(os.environ, request)
        version = None
        if options.get("version_command"):
            code, text = first_line(extra_args(request.settings, "version_command"), env=env)
            version = text.splitlines()[0] if code == 0 and text else None
        with tempfile.TemporaryDirectory(prefix="aka-prompt-") as tmp:
            prompt_file = Path(tmp) / "prompt.md"
            prompt_file.write_text(request.prompt)
            mcp_file = Path(tmp) / "mcp.json"
            mcp_file.write_text(json.dumps(mcp_config(request.settings.mcp_servers)))
            argv = command_argv(request, prompt_file, mcp_file)
            return run_cli(argv, request, sink, PARSERS[fmt](), version=version, env=env)

    def check(self) -> AgentCheck:
        """Nothing to check until an arm names a program."""
        return AgentCheck(self.name, installed=True, message="runs the program in options.command")
