"""``aka agents list`` and ``aka agents check``: which agents exist and which can run here."""

from __future__ import annotations

from typing import Annotated

import typer

from aka.agent import agent_names, get_agent
from aka.cli._common import FormatOpt, OutputFormat, emit_rows
from aka.cli._groups import agents_app
from aka_agents import AgentCheck


def _summary(obj: object) -> str:
    doc = (type(obj).__doc__ or "").strip()
    return doc.splitlines()[0].replace("``", "`") if doc else ""


def check_agent(name: str) -> AgentCheck:
    """Check one agent by name; agents without a ``check`` need nothing installed.

    Raises:
        InputError: no agent has that name.
    """
    agent = get_agent(name, where="aka agents check")
    probe = getattr(agent, "check", None)
    if probe is None:
        return AgentCheck(name, installed=True, message="built in; nothing to install")
    result = probe()
    assert isinstance(result, AgentCheck)
    return result


@agents_app.command("list")
def list_agents(fmt: FormatOpt = OutputFormat.table) -> None:
    """List every agent: built-ins and those registered under the ``aka.agents`` entry points."""
    rows: list[dict[str, object]] = []
    for name in agent_names():
        agent = get_agent(name)
        rows.append({"name": name, "module": type(agent).__module__, "summary": _summary(agent)})
    emit_rows(rows, fmt, title=f"{len(rows)} agents")


@agents_app.command("check")
def check_agents(
    names: Annotated[
        list[str] | None, typer.Argument(help="Agents to check (default: all).", show_default=False)
    ] = None,
    fmt: FormatOpt = OutputFormat.table,
) -> None:
    """Installed, version and login state of agents, without spending model tokens.

    Exits 1 when an agent named on the command line is not ready (not installed, or
    known to be logged out); checking all agents only reports.
    """
    checks = [check_agent(n) for n in (names or agent_names())]
    rows: list[dict[str, object]] = [
        {
            "name": c.name,
            "installed": c.installed,
            "version": c.version,
            "authenticated": ""
            if not c.installed
            else "unknown"
            if c.authenticated is None
            else c.authenticated,
            "ready": c.ready,
            "message": c.message,
        }
        for c in checks
    ]
    emit_rows(rows, fmt, title="agent checks")
    if names and not all(c.ready for c in checks):
        raise typer.Exit(1)
