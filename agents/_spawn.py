"""Running one untrusted process tree: spawn, stream, time out, clean up.

An agent CLI is an untrusted, long-running process tree. :func:`run_process` runs it so
that:

- its stdout reaches a line handler as it arrives, and is kept as a capped transcript
  (:mod:`aka_agents._transcript`);
- at the timeout the whole process tree is stopped: SIGTERM, a grace period, SIGKILL;
- after the main process ends, by itself or not, nothing it started is left running;
- with ``hidden`` paths, it runs where those paths and other processes cannot be seen
  (:mod:`aka_agents._sandbox`).

What "nothing left running" catches, on Linux: every process in the agent's process group
(children and grandchildren, background jobs, ``nohup``), and processes that left the
group with ``setsid`` but kept the inherited environment, found by a per-run marker
variable (``AKA_AGENT_RUN``) in ``/proc/<pid>/environ``; in a sandbox with its own PID
namespace, every process in it dies with it. A process that both leaves the session and
scrubs its environment outside a PID namespace escapes; container runners catch those.
Elsewhere only the process group is signalled.
"""

from __future__ import annotations

import os
import select
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aka.agent import AgentSettings
from aka.errors import InputError
from aka_agents._transcript import Lines, StdoutPump, pump_stdout, pump_tail
from aka_agents._tree import MARKER_VAR, stop_tree

MiB = 1 << 20


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
        containment: what the sandbox did (``contained (...); own PID namespace``) or
            why not (``not contained: ...``); None when no sandbox was asked for.
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
    containment: str | None = None


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    limits: Limits,
    on_line: Callable[[str], None],
    hidden: Sequence[Path] | None = None,
) -> ProcessResult:
    """Run ``argv`` to completion or timeout, feeding stdout lines to ``on_line``.

    ``on_line`` is called on the caller's thread, in stream order (a reader thread only
    reads). Stdin is closed: an agent waiting for input gets EOF instead of hanging.
    With ``hidden`` (even empty), the process runs in its own PID and mount namespaces
    with those paths covered (:mod:`aka_agents._sandbox`), where the kernel allows.
    """
    marker = uuid.uuid4().hex
    started = time.monotonic()
    status_r = status_w = paths_r = -1
    cmd = list(argv)
    if hidden is not None:  # imported here: `python -m aka_agents._sandbox` runs it as main
        from aka_agents._sandbox import command, paths_payload

        status_r, status_w = os.pipe()
        paths_r, paths_w = os.pipe()
        with os.fdopen(paths_w, "wb") as f:  # a few paths: far below the pipe's buffer
            f.write(paths_payload(hidden))
        cmd = command(argv, status_w, paths_r)
    try:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env={**env, MARKER_VAR: marker},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own session and process group (pgid == pid)
            pass_fds=(status_w, paths_r) if status_w >= 0 else (),
        )
    except OSError as exc:
        return ProcessResult(exit_code=None, spawn_error=f"{argv[0]}: {exc.strerror or exc}")
    finally:
        if status_w >= 0:
            os.close(status_w)
            os.close(paths_r)
    containment = None
    if status_r >= 0:
        from aka_agents._sandbox import EXEC_FAILED

        containment = _read_status(status_r, min(30.0, max(1.0, limits.timeout_seconds)))
        if containment.startswith(EXEC_FAILED):
            proc.wait()
            spawn_error = containment.removeprefix(EXEC_FAILED)
            return ProcessResult(exit_code=None, spawn_error=spawn_error)
    lines = Lines(on_line)
    out = StdoutPump(limits.max_transcript_bytes, limits.max_line_bytes, lines.queue.put)
    err: list[bytes] = []
    assert proc.stdout is not None and proc.stderr is not None
    reader = threading.Thread(target=pump_stdout, args=(out, proc.stdout, lines), daemon=True)
    err_reader = threading.Thread(target=pump_tail, args=(proc.stderr, err), daemon=True)
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
        launcher = _launcher(proc) if hidden is not None else 0
        killed = max(0, stop_tree(proc.pid, marker, limits.kill_grace_seconds) - launcher)
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
        containment=containment,
    )


def _launcher(proc: subprocess.Popen[bytes]) -> int:
    """How many of the tree's live processes are the sandbox's own (launcher and init)."""
    if proc.poll() is not None:
        return 0
    try:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    except OSError:
        children = []
    return 1 + min(1, len(children))


def _read_status(fd: int, within: float) -> str:
    """The sandbox launcher's last line (what it did, or that exec failed), until EOF.

    EOF comes when the agent is executed (the pipe is closed on exec); a launcher that
    says nothing within ``within`` seconds is recorded as such and left to run.
    """
    data = b""
    end = time.monotonic() + within
    try:
        while (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                lines = data.decode("utf-8", "replace").strip().splitlines()
                return lines[-1] if lines else "not contained: the sandbox launcher said nothing"
            data += chunk
    finally:
        os.close(fd)
    return "not contained: no word from the sandbox launcher in time"
