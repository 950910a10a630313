"""Claude Code, run headless with its ``stream-json`` output parsed into items.

Command line (as AgentKernelArena runs it, plus a turn limit when asked)::

    claude --print --verbose --output-format stream-json --include-partial-messages
           --permission-mode bypassPermissions [--model M] [--effort E] [--max-turns N]
           [--mcp-config=FILE] [--allowedTools=T,..] [--disallowedTools=T,..]
           [options.args ...] PROMPT

The CLI runs with the workspace as its working directory. An arm's MCP servers are
written to ``FILE`` (``{"mcpServers": {...}}``) in a temporary folder outside the workspace.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from aka.agent import AgentOutcome, AgentRequest, AgentSink, register_agent
from aka.treatments import mcp_config
from aka_agents._options import CliOptions
from aka_agents._process import AgentCheck, check_cli, env_credentials, extra_args, launch
from aka_agents._streams import ClaudeParser

INSTALL = "npm install -g @anthropic-ai/claude-code"
_KEYS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
)


def claude_argv(
    exe: str, request: AgentRequest, *, mcp_file: Path | None = None
) -> tuple[list[str], list[str]]:
    """The command line for one run, and notes on settings it ignores (none here).

    ``mcp_file`` is the MCP configuration written for the arm's servers, if it has any.
    """
    s = request.settings
    argv = [
        exe,
        "--print",
        "--verbose",
        "--output-format",
        "stream-json",
        "--include-partial-messages",
        "--permission-mode",
        "bypassPermissions",
    ]
    if s.model:
        argv += ["--model", s.model]
    if s.effort:
        argv += ["--effort", s.effort]
    if s.max_iterations is not None:
        argv += ["--max-turns", str(s.max_iterations)]
    # These flags are variadic: the ``=`` form keeps them from swallowing the prompt.
    if mcp_file is not None:
        argv.append(f"--mcp-config={mcp_file}")
    if s.allowed_tools:
        argv.append("--allowedTools=" + ",".join(s.allowed_tools))
    if s.disallowed_tools:
        argv.append("--disallowedTools=" + ",".join(s.disallowed_tools))
    argv += extra_args(s)
    return [*argv, request.prompt], []


def _auth(exe: str, env: Mapping[str, str]) -> tuple[bool | None, str]:
    key = env_credentials(env, _KEYS)
    if key:
        return True, f"credentials from {key}"
    home = Path(env.get("CLAUDE_CONFIG_DIR") or Path(env.get("HOME", "~")).expanduser() / ".claude")
    if (home / ".credentials.json").is_file():
        return True, f"logged in ({home / '.credentials.json'})"
    if sys.platform == "darwin":
        return (
            None,
            "no API key set; a login would be in the macOS keychain (run `claude` once to check)",
        )
    return False, "not logged in: set ANTHROPIC_API_KEY or run `claude` and log in"


@register_agent("claude_code")
class ClaudeCodeAgent:
    """Anthropic's Claude Code CLI."""

    name: ClassVar[str] = "claude_code"
    Options: ClassVar[type[CliOptions]] = CliOptions
    treatments: ClassVar[frozenset[str]] = frozenset(
        {"mcp_servers", "allowed_tools", "disallowed_tools"}
    )

    def run(self, request: AgentRequest, sink: AgentSink) -> AgentOutcome:
        """Run ``claude`` in the workspace until it finishes or the timeout stops it.

        The effort is also set as ``CLAUDE_CODE_EFFORT_LEVEL``, which some releases honour
        where they ignore ``--effort``.
        """
        if request.settings.effort:
            env = {"CLAUDE_CODE_EFFORT_LEVEL": request.settings.effort, **request.env}
            request = dataclasses.replace(request, env=env)
        with tempfile.TemporaryDirectory(prefix="aka-claude-") as tmp:
            mcp_file = None
            if request.settings.mcp_servers:
                mcp_file = Path(tmp) / "mcp.json"
                mcp_file.write_text(json.dumps(mcp_config(request.settings.mcp_servers)))
            return launch(
                request,
                sink,
                executable="claude",
                install=INSTALL,
                parser=ClaudeParser(),
                build=lambda exe, req: claude_argv(exe, req, mcp_file=mcp_file),
            )

    def check(self) -> AgentCheck:
        """Installed, version, and credentials present (no model call)."""
        return check_cli(self.name, "claude", INSTALL, _auth)
