"""Subprocess machinery shared by every CLI agent: spawn, stream, cap, time out, clean up.

An agent CLI is an untrusted, long-running process tree. This module runs it so that:

- its stdout is read line by line and handed to a parser as it arrives (lines longer
  than a limit are cut, the rest of the line is dropped and counted);
- the raw stdout is kept as the transcript under a size cap, streamed: the first and
  the last half of the cap are kept, the bytes between are counted and hashed (BLAKE3)
  as they pass and a marker line in the transcript says how many and their digest, so
  neither memory nor what is stored grows with the output; the parser still sees every
  line (the final usage event is not lost), and the result is flagged as truncated;
- at the timeout the whole process tree is stopped: SIGTERM, a grace period, SIGKILL;
- after the main process ends, by itself or not, nothing it started is left running.

What "nothing left running" catches, on Linux: every process in the agent's process group
(children and grandchildren, background jobs, ``nohup``), and processes that left the
group with ``setsid`` but kept the inherited environment, found by a per-run marker
variable (``AKA_AGENT_RUN``) in ``/proc/<pid>/environ``. A process that both leaves the
session and scrubs its environment escapes; container runners catch those. Elsewhere only
the process group is signalled.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from blake3 import blake3

from aka.agent import AgentItem, AgentOutcome, AgentRequest, AgentSettings, AgentSink
from aka.errors import InputError
from aka_agents._streams import StreamParser, StreamTotals
from aka_agents._tree import MARKER_VAR, stop_tree

MiB = 1 << 20
_STDERR_TAIL = 64 * 1024
_QUEUE_LINES = 10_000  # lines read ahead of the parser before the reader waits


@dataclass(frozen=True)
class Limits:
    """Budgets for one process run.

    Attributes:
        timeout_seconds: wall-clock budget; at the end the process tree is stopped.
        max_transcript_bytes: stdout kept verbatim up to this size (parsing goes on).
        max_line_bytes: a longer stdout line is cut here and its rest dropped.
        kill_grace_seconds: time between SIGTERM and SIGKILL.
    """

    timeout_seconds: float
    max_transcript_bytes: int = 64 * MiB
    max_line_bytes: int = 4 * MiB
    kill_grace_seconds: float = 5.0

    @classmethod
    def from_settings(cls, settings: AgentSettings) -> Limits:
        """Limits from an arm's settings; ``options`` may override the caps and the grace.

        Raises:
            InputError: an override is not a number.
        """
        extra = settings.options
        values: dict[str, float] = {}
        for key, default in (
            ("max_transcript_bytes", 64 * MiB),
            ("max_line_bytes", 4 * MiB),
            ("kill_grace_seconds", 5.0),
        ):
            try:
                values[key] = float(extra.get(key, default))
            except (TypeError, ValueError):
                raise InputError(
                    f"{extra[key]!r} is not a number",
                    where=f"options.{key}",
                    fix="give a number",
                ) from None
        return cls(
            timeout_seconds=float(settings.timeout_seconds),
            max_transcript_bytes=int(values["max_transcript_bytes"]),
            max_line_bytes=int(values["max_line_bytes"]),
            kill_grace_seconds=values["kill_grace_seconds"],
        )


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


@dataclass(frozen=True)
class ProcessResult:
    """How a process run ended.

    Attributes:
        exit_code: the main process's return code (negative: killed by that signal);
            None when it could not be started.
        timed_out: the timeout stopped it.
        transcript: stdout: all of it up to ``Limits.max_transcript_bytes``, else its
            first and last half of the cap around a marker line naming what was left out.
        truncated: the transcript was capped or at least one line was cut.
        stdout_bytes: every stdout byte read (cut long lines excepted).
        omitted_bytes: stdout bytes left out of the transcript.
        omitted_digest: BLAKE3 (``b3:``) of those bytes, None when none were.
        long_lines: how many lines were cut at ``Limits.max_line_bytes``.
        stderr_tail: the last 64 KiB of stderr, decoded.
        killed: processes of the tree signalled after the main process ended or timed out.
        handler_errors: lines whose handler raised (the line is in the transcript).
        spawn_error: why the process could not be started, if it could not.
        wall_seconds: wall-clock time from spawn to the end of cleanup.
    """

    exit_code: int | None
    timed_out: bool = False
    transcript: bytes = b""
    truncated: bool = False
    stdout_bytes: int = 0
    omitted_bytes: int = 0
    omitted_digest: str | None = None
    long_lines: int = 0
    stderr_tail: str = ""
    killed: int = 0
    handler_errors: int = 0
    spawn_error: str | None = None
    wall_seconds: float = 0.0


class _Transcript:
    """The head and tail of a stream under a byte cap, and the count and digest of the rest.

    Memory stays under about twice the cap whatever the stream's size: the head is
    filled first, later bytes go to a tail buffer trimmed to its half of the cap, and
    the bytes trimmed off (the omitted middle, in stream order) are hashed as they go.
    """

    def __init__(self, cap: int):
        self.head_cap = max(0, cap) // 2
        self.tail_cap = max(0, cap) - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.omitted = 0
        self._middle = blake3()

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        excess = len(self.tail) - self.tail_cap
        if excess > self.tail_cap or (excess > 0 and len(chunk) >= self.tail_cap):
            self._middle.update(memoryview(self.tail)[:excess])
            self.omitted += excess
            del self.tail[:excess]

    def finish(self) -> None:
        excess = len(self.tail) - self.tail_cap
        if excess > 0:
            self._middle.update(memoryview(self.tail)[:excess])
            self.omitted += excess
            del self.tail[:excess]

    @property
    def omitted_digest(self) -> str | None:
        return "b3:" + self._middle.hexdigest() if self.omitted else None

    def value(self) -> bytes:
        """Head, a marker line for what was left out (if anything), tail."""
        self.finish()
        if not self.omitted:
            return bytes(self.head + self.tail)
        marker = (
            f"\n[aka: {self.omitted} bytes of {self.total} left out here; "
            f"their blake3 is {self.omitted_digest}]\n"
        ).encode()
        return bytes(self.head) + marker + bytes(self.tail)


class _Stdout:
    """Reader state for stdout: the transcript under its cap, long-line accounting."""

    def __init__(self, limits: Limits, on_line: Callable[[str], None]):
        self.limits = limits
        self.on_line = on_line
        self.transcript = _Transcript(limits.max_transcript_bytes)
        self.long_lines = 0

    @property
    def capped(self) -> bool:
        self.transcript.finish()
        return self.transcript.omitted > 0

    def keep(self, chunk: bytes) -> None:
        self.transcript.add(chunk)

    def pump(self, stream: IO[bytes]) -> None:
        limit = max(1, self.limits.max_line_bytes)
        skipping = False
        while chunk := stream.readline(limit):
            complete = chunk.endswith(b"\n")
            if skipping:  # the rest of a line already cut
                skipping = not complete
                continue
            if not complete and len(chunk) >= limit:
                self.long_lines += 1
                skipping = True
                chunk += b"\n"
            self.keep(chunk)
            self.on_line(chunk.decode("utf-8", "replace").rstrip("\r\n"))


def _pump_tail(stream: IO[bytes], out: list[bytes]) -> None:
    tail = b""
    while chunk := stream.read(8192):
        tail = (tail + chunk)[-_STDERR_TAIL:]
    out.append(tail)


class _Lines:
    """Hands stdout lines from the reader thread to the caller's thread, in order."""

    def __init__(self, on_line: Callable[[str], None]):
        self.queue: queue.Queue[str | None] = queue.Queue(maxsize=_QUEUE_LINES)
        self.on_line = on_line
        self.eof = False
        self.handler_errors = 0

    def handle_next(self, wait: float) -> None:
        """Handle one line if one arrives within ``wait`` seconds."""
        try:
            line = self.queue.get(timeout=wait)
        except queue.Empty:
            return
        if line is None:
            self.eof = True
            return
        try:
            self.on_line(line)
        except Exception:  # a handler bug must not stop the draining of the pipe
            self.handler_errors += 1

    def drain(self, reader: threading.Thread, within: float) -> None:
        """Handle what is left, until end of file or ``within`` seconds."""
        end = time.monotonic() + within
        while not self.eof and time.monotonic() < end:
            if not reader.is_alive() and self.queue.empty():
                return
            self.handle_next(0.05)


def _pump_stdout(out: _Stdout, stream: IO[bytes], lines: _Lines) -> None:
    try:
        out.pump(stream)
    finally:
        lines.queue.put(None)


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    limits: Limits,
    on_line: Callable[[str], None],
) -> ProcessResult:
    """Run ``argv`` to completion or timeout, feeding stdout lines to ``on_line``.

    ``on_line`` is called on the caller's thread, in stream order (a reader thread only
    reads). Stdin is closed: an agent waiting for input gets EOF instead of hanging.
    """
    marker = uuid.uuid4().hex
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env={**env, MARKER_VAR: marker},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own session and process group (pgid == pid)
        )
    except OSError as exc:
        return ProcessResult(exit_code=None, spawn_error=f"{argv[0]}: {exc.strerror or exc}")
    lines = _Lines(on_line)
    out = _Stdout(limits, lines.queue.put)
    err: list[bytes] = []
    assert proc.stdout is not None and proc.stderr is not None
    reader = threading.Thread(target=_pump_stdout, args=(out, proc.stdout, lines), daemon=True)
    err_reader = threading.Thread(target=_pump_tail, args=(proc.stderr, err), daemon=True)
    reader.start()
    err_reader.start()
    deadline = started + max(0.0, limits.timeout_seconds)
    timed_out = False
    try:
        while not lines.eof and proc.poll() is None and time.monotonic() < deadline:
            lines.handle_next(0.05)
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    finally:
        killed = stop_tree(proc.pid, marker, limits.kill_grace_seconds)
        proc.wait()
    lines.drain(reader, limits.kill_grace_seconds + 1.0)
    err_reader.join(timeout=1.0)
    return ProcessResult(
        exit_code=proc.returncode,
        timed_out=timed_out,
        transcript=out.transcript.value(),
        truncated=out.capped or out.long_lines > 0,
        stdout_bytes=out.transcript.total,
        omitted_bytes=out.transcript.omitted,
        omitted_digest=out.transcript.omitted_digest,
        long_lines=out.long_lines,
        stderr_tail=err[0].decode("utf-8", "replace") if err else "",
        killed=killed,
        handler_errors=lines.handler_errors,
        wall_seconds=time.monotonic() - started,
    )


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
    result = run_process(argv, cwd=request.workspace, env=run_env, limits=limits, on_line=on_line)
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
            },
        )
    )
    if outcome.error:
        sink.emit(AgentItem("error", outcome.error, {"status": outcome.status}))
    return outcome


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
