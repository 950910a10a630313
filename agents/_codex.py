"""OpenAI Codex CLI, run with ``exec --json`` and its JSONL events parsed into items.

Command line (as AgentKernelArena runs it)::

    codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check
          --cd WORKSPACE [--model M] [-c model_reasoning_effort="E"]
          [-c mcp_servers.NAME.command="..." -c mcp_servers.NAME.args=[...]
           -c mcp_servers.NAME.env={...}] [options.args ...] PROMPT

Codex has no turn limit flag, so ``max_iterations`` is recorded as ignored. An arm's MCP
servers go in as ``-c`` overrides of ``config.toml`` keys (TOML values): nothing is
written and the user's ``CODEX_HOME`` (with its login) stays in use. Codex has no tool
allow/deny flags, so arms with tool lists are refused before the run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import ClassVar

from aka.agent import AgentOutcome, AgentRequest, AgentSink, McpServer, register_agent
from aka_agents._options import CliOptions
from aka_agents._process import (
    AgentCheck,
    check_cli,
    env_credentials,
    extra_args,
    first_line,
    launch,
)
from aka_agents._stream_codex import CodexParser

INSTALL = "npm install -g @openai/codex"


def mcp_overrides(servers: Mapping[str, McpServer]) -> list[str]:
    """``-c`` arguments declaring each MCP server (keys and strings as TOML values)."""
    out: list[str] = []
    for name, server in sorted(servers.items()):
        key = f"mcp_servers.{name}"
        out += ["-c", f"{key}.command={json.dumps(server.command)}"]
        out += ["-c", f"{key}.args={json.dumps(list(server.args))}"]
        if server.env:
            table = ", ".join(
                f"{json.dumps(k)} = {json.dumps(v)}" for k, v in sorted(server.env.items())
            )
            out += ["-c", f"{key}.env={{{table}}}"]
    return out


def codex_argv(exe: str, request: AgentRequest) -> tuple[list[str], list[str]]:
    """The command line for one run, and notes on settings it ignores."""
    s = request.settings
    argv = [
        exe,
        "exec",
        "--json",
        "--dangerously-bypass-approvals-and-sandbox",
        "--skip-git-repo-check",
        "--cd",
        str(request.workspace),
    ]
    if s.model:
        argv += ["--model", s.model]
    if s.effort:
        argv += ["-c", f'model_reasoning_effort="{s.effort}"']
    argv += mcp_overrides(s.mcp_servers)
    notes = []
    if s.max_iterations is not None:
        notes.append(f"max_iterations={s.max_iterations} ignored: codex exec has no turn limit")
    argv += extra_args(s)
    return [*argv, request.prompt], notes


def _auth(exe: str, env: Mapping[str, str]) -> tuple[bool | None, str]:
    key = env_credentials(env, ("CODEX_API_KEY", "OPENAI_API_KEY"))
    if key:
        return True, f"credentials from {key}"
    code, text = first_line([exe, "login", "status"], env=env)
    if code == 0:
        return True, text or "logged in"
    return (
        False,
        f"not logged in ({text or 'codex login status failed'}): run `codex login` or set OPENAI_API_KEY",
    )


@register_agent("codex")
class CodexAgent:
    """OpenAI's Codex CLI."""

    name: ClassVar[str] = "codex"
    Options: ClassVar[type[CliOptions]] = CliOptions
    treatments: ClassVar[frozenset[str]] = frozenset({"mcp_servers"})

    def run(self, request: AgentRequest, sink: AgentSink) -> AgentOutcome:
        """Run ``codex exec`` in the workspace until it finishes or the timeout stops it."""
        return launch(
            request,
            sink,
            executable="codex",
            install=INSTALL,
            parser=CodexParser(),
            build=codex_argv,
        )

    def check(self) -> AgentCheck:
        """Installed, version, and ``codex login status`` (no model call)."""
        return check_cli(self.name, "codex", INSTALL, _auth)
