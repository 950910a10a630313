"""Cursor's agent CLI, run headless with its ``stream-json`` output parsed into items.

Command line (as AgentKernelArena runs it)::

    cursor-agent --force --print --output-format stream-json --stream-partial-output
                 [--model M] [options.args ...] PROMPT

The CLI runs with the workspace as its working directory. It has no effort or turn-limit
flag, so ``effort`` and ``max_iterations`` are recorded as ignored.

An arm's MCP servers are written to the workspace's ``.cursor/mcp.json`` (the CLI's
project MCP file) and approved with ``--approve-mcps``; its tool lists become
``permissions.allow``/``deny`` in ``.cursor/cli.json`` (entries in Cursor's own syntax,
e.g. ``Shell(ls)``). Both are written after the starting workspace was recorded and are
never part of a candidate (only editable files are).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import ClassVar

from aka.agent import AgentOutcome, AgentRequest, AgentSink, register_agent
from aka.treatments import mcp_config
from aka_agents._options import CliOptions
from aka_agents._process import (
    AgentCheck,
    check_cli,
    env_credentials,
    extra_args,
    first_line,
    launch,
)
from aka_agents._stream_cursor import CursorParser

INSTALL = "curl https://cursor.com/install -fsS | bash"


def cursor_argv(exe: str, request: AgentRequest) -> tuple[list[str], list[str]]:
    """The command line for one run, and notes on settings it ignores."""
    s = request.settings
    argv = [exe, "--force", "--print", "--output-format", "stream-json", "--stream-partial-output"]
    if s.model:
        argv += ["--model", s.model]
    if s.mcp_servers:
        argv += ["--approve-mcps"]
    notes = []
    if s.effort:
        notes.append(f"effort={s.effort!r} ignored: cursor-agent has no effort flag")
    if s.max_iterations is not None:
        notes.append(f"max_iterations={s.max_iterations} ignored: cursor-agent has no turn limit")
    argv += extra_args(s)
    return [*argv, request.prompt], notes


def write_project_config(request: AgentRequest) -> list[str]:
    """Write ``.cursor/mcp.json`` and ``.cursor/cli.json`` for the arm; the paths written."""
    s = request.settings
    written = []
    folder = request.workspace / ".cursor"
    if s.mcp_servers:
        folder.mkdir(exist_ok=True)
        (folder / "mcp.json").write_text(json.dumps(mcp_config(s.mcp_servers), indent=2))
        written.append(".cursor/mcp.json")
    if s.allowed_tools or s.disallowed_tools:
        folder.mkdir(exist_ok=True)
        perms = {"allow": list(s.allowed_tools), "deny": list(s.disallowed_tools)}
        (folder / "cli.json").write_text(json.dumps({"permissions": perms}, indent=2))
        written.append(".cursor/cli.json")
    return written


def _auth(exe: str, env: Mapping[str, str]) -> tuple[bool | None, str]:
    key = env_credentials(env, ("CURSOR_API_KEY",))
    if key:
        return True, f"credentials from {key}"
    code, text = first_line([exe, "status"], env=env)
    if code == 0 and "not logged in" not in text.lower():
        return True, text or "logged in"
    return (
        False,
        f"not logged in ({text or 'cursor-agent status failed'}): run `cursor-agent login` or set CURSOR_API_KEY",
    )


@register_agent("cursor")
class CursorAgent:
    """Cursor's ``cursor-agent`` CLI."""

    name: ClassVar[str] = "cursor"
    Options: ClassVar[type[CliOptions]] = CliOptions
    treatments: ClassVar[frozenset[str]] = frozenset(
        {"mcp_servers", "allowed_tools", "disallowed_tools"}
    )

    def run(self, request: AgentRequest, sink: AgentSink) -> AgentOutcome:
        """Run ``cursor-agent`` in the workspace until it finishes or the timeout stops it."""
        write_project_config(request)
        return launch(
            request,
            sink,
            executable="cursor-agent",
            install=INSTALL,
            parser=CursorParser(),
            build=cursor_argv,
        )

    def check(self) -> AgentCheck:
        """Installed, version, and ``cursor-agent status`` (no model call)."""
        return check_cli(self.name, "cursor-agent", INSTALL, _auth)
