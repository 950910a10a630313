"""Checks of an arm's treatments at run start: every error names the file, field and fix.

Run before anything is recorded (see :func:`aka.treatments.resolve_arms`), so a bad
treatment never leaves a half-started run behind.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from aka.agent import AgentSettings, McpServer, check_options, get_agent
from aka.config import ArmConfig, RunConfig
from aka.errors import InputError
from aka.prompt import template_fields
from aka.tasks import Task

AGENT_TREATMENTS = ("mcp_servers", "allowed_tools", "disallowed_tools")
"""Treatments an agent must declare (``treatments`` or ``treatments_for(settings)``)."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MCP_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_DOCS = "see docs/treatments.md"


def agent_treatments(agent: object, settings: AgentSettings) -> frozenset[str]:
    """The treatments of :data:`AGENT_TREATMENTS` an agent can take with these settings."""
    probe = getattr(agent, "treatments_for", None)
    if callable(probe):
        return frozenset(probe(settings))
    return frozenset(getattr(agent, "treatments", ()))


def _workspace_path(value: str, where: str) -> str:
    p = PurePosixPath(value)
    if not value or p.is_absolute() or ".." in p.parts or value.startswith("~"):
        raise InputError(
            f"{value!r} is not a path inside the workspace",
            where=where,
            fix="give a relative path without '..' (e.g. AGENTS.md or skills/)",
        )
    return p.as_posix()


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _protected(tasks: Sequence[Task]) -> set[str]:
    out: set[str] = set()
    for t in tasks:
        out.update(t.spec.editable)
        if t.spec.reference_visible:
            out.add("reference.py")
    return out


def _check_paths(arm: ArmConfig, tasks: Sequence[Task], where: str) -> None:
    protected = _protected(tasks)
    taken: list[tuple[str, str]] = []
    if arm.memory is not None:
        taken.append((_workspace_path(arm.memory.path, f"{where}, field 'memory.path'"), "memory"))
    for i, f in enumerate(arm.files):
        here = f"{where}, field 'files.{i}.path'"
        dest = _workspace_path(f.path, here)
        for prev, what in taken:
            if _overlaps(dest, prev):
                raise InputError(
                    f"{dest!r} overlaps {what} {prev!r}", where=here, fix="pick distinct paths"
                )
        hit = sorted(p for p in protected if _overlaps(dest, p))
        if hit:
            raise InputError(
                f"{dest!r} would overwrite the task's file(s) {hit}",
                where=here,
                fix="place treatment files elsewhere; the starting sources are the task's",
            )
        taken.append((dest, "file"))


def _check_env(arm: ArmConfig, where: str, environ: Mapping[str, str]) -> None:
    for name in [*arm.env, *arm.secret_env]:
        field_ = "env" if name in arm.env else "secret_env"
        if not _ENV_NAME.match(name) or name.startswith("AKA_"):
            raise InputError(
                f"{name!r} is not a usable variable name",
                where=f"{where}, field '{field_}'",
                fix="use letters, digits and '_' (names starting with AKA_ are reserved)",
            )
    both = sorted(set(arm.env) & set(arm.secret_env))
    if both:
        raise InputError(
            f"{both} set in both env and secret_env",
            where=f"{where}, field 'secret_env'",
            fix="keep each variable in one of them",
        )
    missing = [n for n in arm.secret_env if n not in environ]
    if missing:
        raise InputError(
            f"secret variable(s) {missing} not set in this environment",
            where=f"{where}, field 'secret_env'",
            fix="export them before `aka run` (their values are never recorded)",
        )


def _check_agent(arm: ArmConfig, where: str) -> None:
    for name in arm.mcp_servers:
        if not _MCP_NAME.match(name):
            raise InputError(
                f"MCP server name {name!r} is not usable in every agent's format",
                where=f"{where}, field 'mcp_servers'",
                fix="use letters, digits, '_' and '-'",
            )
    check_options(arm.agent, arm.options, where=where)
    wanted = [t for t in AGENT_TREATMENTS if getattr(arm, t)]
    if not wanted:
        return
    agent = get_agent(arm.agent, where=f"{where}, field 'agent'")
    settings = AgentSettings(
        options=dict(arm.options),
        mcp_servers={
            n: McpServer(c.command, tuple(c.args), dict(c.env)) for n, c in arm.mcp_servers.items()
        },
        allowed_tools=tuple(arm.allowed_tools),
        disallowed_tools=tuple(arm.disallowed_tools),
    )
    takes = agent_treatments(agent, settings)
    for t in wanted:
        if t not in takes:
            raise InputError(
                f"agent {arm.agent!r} cannot take {t}",
                where=f"{where}, field '{t}'",
                fix=f"remove `{t}` or use an agent that takes it ({_DOCS}: claude_code, "
                "codex (MCP only), cursor, command with {mcp_config}/{allowed_tools})",
            )


def source_path(base: Path, value: str, where: str) -> Path:
    """``value`` resolved against ``base``; it must exist."""
    path = Path(value).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.exists():
        raise InputError(
            f"{path} does not exist", where=where, fix="fix the path (relative to the config)"
        )
    return path


def template_text(arm: ArmConfig, base: Path, where: str) -> str | None:
    """The arm's template text (inline or from its file), placeholders checked."""
    if arm.prompt is None:
        return None
    if arm.prompt.template_file is not None:
        here = f"{where}, field 'prompt.template_file'"
        path = source_path(base, arm.prompt.template_file, here)
        if not path.is_file():
            raise InputError(f"{path} is not a file", where=here, fix="point at a text file")
        text: str | None = path.read_text()
        where = here
    else:
        text = arm.prompt.template
        where = f"{where}, field 'prompt.template'"
    if text is not None:
        try:
            template_fields(text)
        except ValueError as exc:
            raise InputError(str(exc), where=where, fix=_DOCS) from None
    return text


def check_runner(config: RunConfig, runner_kind: str, *, where: str) -> None:
    """Refuse a parallel runner for a config with memory arms (also for ``aka resume``).

    Raises:
        InputError: some arm has a memory and ``runner_kind`` is not ``inline``.
    """
    if runner_kind != "inline" and any(a.memory is not None for a in config.arms):
        raise InputError(
            f"memory needs attempts in planned order, but runner is {runner_kind!r}",
            where=where,
            fix="use the inline runner (the default) or drop `memory`",
        )


def check_arm(
    arm: ArmConfig,
    config: RunConfig,
    *,
    base_dir: Path,
    tasks: Sequence[Task],
    where: str,
    environ: Mapping[str, str],
) -> None:
    """Every check of one arm (``where`` names the config and the arm).

    Raises:
        InputError: the first problem found.
    """
    if arm.memory is not None:
        check_runner(config, config.runner.kind, where=f"{where}, field 'memory'")
    _check_paths(arm, tasks, where)
    _check_env(arm, where, environ)
    _check_agent(arm, where)
    template_text(arm, base_dir, where)
    for i, f in enumerate(arm.files):
        if f.source is not None:
            source_path(base_dir, f.source, f"{where}, field 'files.{i}.source'")
