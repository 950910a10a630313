"""Agents where the ledger and the run keys cannot be seen: a launcher in new namespaces.

An agent runs as the same user as ``aka``: without more, it can read the run key
directory (and sign outcomes) and find the ledger through ``/proc/<parent>/cmdline``.
:func:`run_process <aka_agents._spawn.run_process>` with ``hidden`` paths therefore
starts ``python -I -m aka_agents._sandbox --status-fd N --paths-fd M -- ARGV``, a
launcher that reads the paths to hide from its pipe (never from its command line, which
the agent could read in ``/proc/1/cmdline``) and, before it executes the agent:

1. as a non-root user, enters a new user namespace (its uid mapped to itself), which
   gives it the right to make the others;
2. unshares a PID namespace and forks: the child is PID 1 of it, so ``/proc`` there
   shows only the agent's own processes, and every process left in it dies with it;
3. in the child, :func:`aka.eval.hide` (the evaluator's own): a private mount namespace
   where each hidden path is covered by an empty read-only tmpfs, ``/proc`` is mounted
   afresh, and every capability is dropped so none of it can be undone;
4. the child stays as the namespace's init (reaping, passing on signals) and runs the
   agent as its child.

The agent keeps the network, its workspace, ``/tmp`` and the self-evaluation socket.
What was done, or why not, is one line on the status pipe, written before the agent
starts; the pipe is closed on exec, so a program that cannot be executed says so on it
too. Where the kernel refuses a step the agent still runs, and the line says
``not contained: ...`` (recorded with the attempt).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
PR_SET_PDEATHSIG = 1
EXEC_FAILED = "exec failed: "
_FORWARD = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def command(argv: Sequence[str], status_fd: int, paths_fd: int) -> list[str]:
    """The launcher's command line for ``argv``; the paths to hide go down ``paths_fd``."""
    out = [sys.executable, "-I", "-m", "aka_agents._sandbox"]
    out += ["--status-fd", str(status_fd), "--paths-fd", str(paths_fd)]
    return [*out, "--", *argv]


def paths_payload(hidden: Sequence[Path]) -> bytes:
    """What the caller writes down the paths pipe: one path per line."""
    return "".join(f"{p}\n" for p in hidden).encode()


def _parse(args: list[str]) -> tuple[int, int, list[str]]:
    fds = {"--status-fd": -1, "--paths-fd": -1}
    i = 0
    while i < len(args) and args[i] != "--":
        if args[i] not in fds or i + 1 >= len(args):
            raise SystemExit(f"aka sandbox: unknown argument {args[i]!r}")
        fds[args[i]] = int(args[i + 1])
        i += 2
    argv = args[i + 1 :]
    if min(fds.values()) < 0 or not argv:
        raise SystemExit("usage: python -m aka_agents._sandbox --status-fd N --paths-fd M -- ARGV")
    return fds["--status-fd"], fds["--paths-fd"], argv


def _read_paths(fd: int) -> list[str]:
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    os.close(fd)
    return [line for line in data.decode().splitlines() if line]


def _say(fd: int, line: str) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, (line.replace("\n", " ") + "\n").encode())


def _strerror() -> str:
    return os.strerror(ctypes.get_errno())


def _user_namespace(libc: ctypes.CDLL) -> str | None:
    """As a non-root user, a user namespace of one's own; None when done (or not needed)."""
    if os.geteuid() == 0:
        return None
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER) != 0:
        return f"unshare(CLONE_NEWUSER) failed: {_strerror()}"
    try:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    except OSError as exc:
        return f"mapping the user namespace failed: {exc.strerror}"
    return None


def _exec(fd: int, argv: list[str]) -> None:
    """Become the agent; if that fails, say so on the status pipe and exit 127."""
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        _say(fd, f"{EXEC_FAILED}{argv[0]}: {exc.strerror or exc}")
        os._exit(127)


def _wait(child: int) -> int:
    """Wait for ``child`` (passing signals on to it), reaping any other child meanwhile.

    Returns its wait status.
    """

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)

    for sig in _FORWARD:
        signal.signal(sig, forward)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 0
        if pid == child:
            return status


def _contained_child(fd: int, hidden: list[str], argv: list[str], note: str, died: int) -> None:
    """In the new PID namespace: hide, report, then run the agent as init's child.

    A namespace's init cannot die of a signal it sends itself, so when the agent is
    killed by one, its number goes down ``died`` and the launcher dies of it instead.
    """
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    from aka.eval import hide

    _say(fd, f"{hide(hidden)}; {note}")
    agent = os.fork()
    if agent == 0:
        _exec(fd, argv)
    os.close(fd)
    status = _wait(agent)
    if os.WIFSIGNALED(status):
        os.write(died, str(os.WTERMSIG(status)).encode())
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status))


def main(args: list[str]) -> int:
    fd, paths_fd, argv = _parse(args)
    hidden = _read_paths(paths_fd)
    os.set_inheritable(fd, False)  # closed when the agent is executed: EOF for the reader
    if not sys.platform.startswith("linux"):
        _say(fd, f"not contained: {sys.platform} has no namespaces")
        _exec(fd, argv)
    libc = ctypes.CDLL(None, use_errno=True)
    refused = _user_namespace(libc)
    if refused is not None:
        _say(fd, f"not contained: {refused}")
        _exec(fd, argv)
    if libc.unshare(CLONE_NEWPID) == 0:
        pid_note = "own PID namespace"
    else:
        pid_note = f"no PID namespace: unshare(CLONE_NEWPID) failed: {_strerror()}"
    died_r, died_w = os.pipe()  # not inherited by the agent (close-on-exec)
    child = os.fork()
    if child == 0:
        os.close(died_r)
        _contained_child(fd, hidden, argv, pid_note, died_w)
    os.close(fd)
    os.close(died_w)
    status = _wait(child)
    if signum := os.read(died_r, 16):  # the agent died of a signal: so does the launcher
        signal.signal(int(signum), signal.SIG_DFL)
        os.kill(os.getpid(), int(signum))
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
