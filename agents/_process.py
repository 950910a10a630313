"""The CLI-agent layer over :func:`run_process`: environment, launch, outcome, checks.

Every CLI agent (Claude Code, Codex, Cursor, mini-SWE, ``command``) goes through
:func:`run_cli`: the agent's environment without ``AKA_*``, its stream parsed into items
as it arrives, a closing ``log`` item saying how the process ended (and whether it was
contained), and an :class:`AgentOutcome` from the process and the stream.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aka.agent import AgentItem, AgentOutcome, AgentRequest, AgentSettings, AgentSink
from aka.errors import InputError
from aka_agents._spawn import Limits, MiB, ProcessResult, run_process
from aka_agents._streams import StreamParser, StreamTotals

__all__ = [
    "AgentCheck",
    "Limits",
    "ProcessResult",
    "agent_env",
    "check_cli",
    "env_credentials",
    "extra_args",
    "first_line",
    "launch",
    "outcome_from",
    "resolve_executable",
    "run_cli",
    "run_process",
]


def extra_args(settings: AgentSettings, key: str = "args") -> list[str]:
    """A list-of-strings setting from ``options`` (empty when unset).

    Raises:
        InputError: the value is not a list of strings.
    """
    value = settings.options.get(key, [])
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise InputError(
            f"expected a list of strings, got {value!r}",
            where=f"options.{key}",
            fix='write it as a YAML list, e.g. ["--flag", "value"]',
        )
    return list(value)


def agent_env(base: Mapping[str, str], request: AgentRequest) -> dict[str, str]:
    """The agent's environment: ours without ``AKA_*``, then the request's, then ``options.env``.

    ``AKA_*`` variables of this process (``AKA_LEDGER`` above all) are dropped so an agent
    cannot find the ledger; the request and the arm may still set such variables (the
    self-evaluation socket is one). When the self-evaluation program (``aka``) is not on
    the agent's PATH but sits beside this interpreter, that directory is put first on PATH
    so the command the prompt names works.
    """
    extra_env: Any = request.settings.options.get("env", {})
    if not isinstance(extra_env, Mapping):
        raise InputError(
            f"expected a mapping, got {extra_env!r}",
            where="options.env",
            fix="write it as a YAML mapping of NAME: value",
        )
    own = {k: v for k, v in base.items() if not k.startswith("AKA_")}
    env = {**own, **request.env, **{str(k): str(v) for k, v in extra_env.items()}}
    if request.eval_command:
        program = request.eval_command[0]
        beside = Path(sys.executable).parent
        if shutil.which(program, path=env.get("PATH")) is None and (beside / program).is_file():
            env["PATH"] = os.pathsep.join(p for p in (str(beside), env.get("PATH")) if p)
    return env


def first_line(
    argv: Sequence[str], *, env: Mapping[str, str], timeout: float = 10.0
) -> tuple[int | None, str]:
    """Run a short command (``--version``, ``login status``) and return (exit code, output).

    Runs through :func:`run_process`, so a CLI that hangs is killed with its children.
    """
    lines: list[str] = []
    result = run_process(
        argv,
        cwd=Path.cwd(),
        env=env,
        limits=Limits(timeout_seconds=timeout, max_transcript_bytes=MiB, kill_grace_seconds=1.0),
        on_line=lines.append,
    )
    if result.spawn_error:
        return None, result.spawn_error
    text = "\n".join(line for line in lines if line.strip()) or result.stderr_tail.strip()
    return result.exit_code, text


def outcome_from(
    result: ProcessResult, totals: StreamTotals, *, version: str | None, requested_model: str | None
) -> AgentOutcome:
    """The outcome of a CLI run: status from the process, numbers from the stream.

    Status is ``timeout`` when the timeout stopped it, ``error`` when it could not start,
    exited non-zero or its stream reported an error, else ``ok``. The model is the one
    the stream names, else the one requested.
    """
    status: Literal["ok", "timeout", "error"] = "ok"
    error = None
    if result.spawn_error:
        status, error = "error", result.spawn_error
    elif result.timed_out:
        status, error = "timeout", "timed out; the process tree was stopped"
    elif result.exit_code != 0:
        tail = result.stderr_tail.strip()[-2000:]
        status, error = (
            "error",
            f"exited with code {result.exit_code}" + (f": {tail}" if tail else ""),
        )
    elif totals.is_error:
        status, error = "error", totals.error or "the agent reported an error"
    return AgentOutcome(
        status=status,
        exit_code=result.exit_code,
        model=totals.model or requested_model,
        tokens_in=totals.tokens_in,
        tokens_out=totals.tokens_out,
        cost_usd=totals.cost_usd,
        transcript=result.transcript,
        error=error,
        version=version,
        truncated=result.truncated,
    )


def run_cli(
    argv: Sequence[str],
    request: AgentRequest,
    sink: AgentSink,
    parser: StreamParser,
    *,
    version: str | None,
    env: Mapping[str, str] | None = None,
) -> AgentOutcome:
    """Run one agent CLI in the request's workspace and turn its stream into items and an outcome.

    Items reach ``sink`` as they are parsed (on the caller's thread, in stream order); a
    closing ``log`` item records how the process ended (exit code, wall time, cut lines,
    processes stopped), and an ``error`` item says why a run failed.
    """
    settings = request.settings
    limits = Limits.from_settings(settings)

    def on_line(line: str) -> None:
        for item in parser.feed(line):
            sink.emit(item)

    run_env = env if env is not None else agent_env(os.environ, request)
    hidden = _hidden(request)
    result = run_process(
        argv, cwd=request.workspace, env=run_env, limits=limits, on_line=on_line, hidden=hidden
    )
    containment = result.containment or "not contained: options.contain is false"
    if containment.startswith("not contained"):
        sink.emit(AgentItem("log", f"the agent ran {containment}", {"containment": containment}))
    for item in parser.finish():
        sink.emit(item)
    outcome = outcome_from(result, parser.totals, version=version, requested_model=settings.model)
    sink.emit(
        AgentItem(
            "log",
            "process ended",
            {
                "exit_code": result.exit_code,
                "timed_out": result.timed_out,
                "wall_seconds": round(result.wall_seconds, 3),
                "transcript_bytes": len(result.transcript),
                "stdout_bytes": result.stdout_bytes,
                "omitted_bytes": result.omitted_bytes,
                "omitted_digest": result.omitted_digest,
                "truncated": result.truncated,
                "long_lines": result.long_lines,
                "malformed_lines": parser.totals.malformed_lines,
                "processes_stopped": result.killed,
                "handler_errors": result.handler_errors,
                "containment": containment,
            },
        )
    )
    if outcome.error:
        sink.emit(AgentItem("error", outcome.error, {"status": outcome.status}))
    return outcome


def _hidden(request: AgentRequest) -> tuple[Path, ...] | None:
    """What the sandbox covers, or None where ``options.contain`` is false.

    Raises:
        InputError: ``contain`` is not a boolean.
    """
    contain = request.settings.options.get("contain", True)
    if not isinstance(contain, bool):
        raise InputError(
            f"expected true or false, got {contain!r}",
            where="options.contain",
            fix="write `contain: false` to run the agent without namespaces (debugging)",
        )
    return request.hidden if contain else None


@dataclass(frozen=True)
class AgentCheck:
    """Whether an agent can run here, found without spending model tokens.

    Attributes:
        name: the agent's registered name.
        installed: its program (or package) is present.
        version: what its ``--version`` said.
        authenticated: True/False when the CLI can tell without a model call, None when
            it cannot be told (the first run will say).
        message: what to do next, or what was found.
    """

    name: str
    installed: bool
    version: str | None = None
    authenticated: bool | None = None
    message: str = ""

    @property
    def ready(self) -> bool:
        """Installed and not known to be logged out."""
        return self.installed and self.authenticated is not False


AuthProbe = Callable[[str, Mapping[str, str]], tuple[bool | None, str]]
ArgvBuilder = Callable[[str, AgentRequest], tuple[list[str], list[str]]]


def resolve_executable(default: str, settings: AgentSettings, env: Mapping[str, str]) -> str | None:
    """The agent program: ``options.executable`` if set, else ``default`` looked up on PATH."""
    exe = str(settings.options.get("executable") or default)
    if os.sep in exe:
        return exe if os.access(exe, os.X_OK) else None
    return shutil.which(exe, path=env.get("PATH"))


def cli_version(exe: str, env: Mapping[str, str]) -> str | None:
    """First line of ``exe --version``, or None when it fails."""
    code, text = first_line([exe, "--version"], env=env)
    return text.splitlines()[0].strip() if code == 0 and text else None


def launch(
    request: AgentRequest,
    sink: AgentSink,
    *,
    executable: str,
    install: str,
    parser: StreamParser,
    build: ArgvBuilder,
) -> AgentOutcome:
    """Find the CLI, build its command line, run it and parse its stream.

    ``build`` returns the argv and notes on settings the CLI cannot honour (each becomes
    a ``log`` item, so a run records what was ignored).
    """
    env = agent_env(os.environ, request)
    exe = resolve_executable(executable, request.settings, env)
    if exe is None:
        message = f"{executable!r} not found on PATH; install it: {install}"
        sink.emit(AgentItem("error", message))
        return AgentOutcome(status="error", error=message)
    argv, notes = build(exe, request)
    for note in notes:
        sink.emit(AgentItem("log", note, {"ignored_setting": True}))
    return run_cli(argv, request, sink, parser, version=cli_version(exe, env), env=env)


def check_cli(name: str, executable: str, install: str, auth: AuthProbe) -> AgentCheck:
    """Installed, version and login state of a CLI agent, from the current environment."""
    env = dict(os.environ)
    exe = shutil.which(executable, path=env.get("PATH"))
    if exe is None:
        return AgentCheck(
            name, installed=False, message=f"{executable} not found on PATH; install: {install}"
        )
    authenticated, message = auth(exe, env)
    return AgentCheck(name, True, cli_version(exe, env), authenticated, message)


def env_credentials(env: Mapping[str, str], names: Sequence[str]) -> str | None:
    """The first of ``names`` set (non-empty) in ``env``."""
    return next((n for n in names if env.get(n)), None)
