"""A warm evaluation process asked for its exit from two threads at once.

The refill thread checks a spare's liveness (``poll``) while the evaluator stops it
(``kill`` waits): the zygote sends one exit message, and the thread that reads it closes
the status socket. The other one must answer with that status, not fail on the closed
socket (it once failed every evaluation of a red-team batch that shared a checker).
"""

from __future__ import annotations

import io
import socket
import subprocess

import pytest

from aka.eval._warm import WarmProcess


def _pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


class _ReadElsewhere(socket.socket):
    """A status socket whose exit another thread reads (and closes) just before this one
    touches it."""

    proc: WarmProcess

    def _other_thread_read_it(self) -> None:
        self.proc.returncode = 3
        self.close()

    def settimeout(self, value: float | None) -> None:
        self._other_thread_read_it()
        super().settimeout(value)

    def setblocking(self, flag: bool) -> None:
        if not flag:
            self._other_thread_read_it()
        super().setblocking(flag)


def _racing() -> WarmProcess:
    ours, theirs = _pair()
    status = _ReadElsewhere(fileno=ours.detach())
    proc = WarmProcess(1, status, io.BytesIO(), io.BytesIO())
    status.proc = proc
    theirs.close()
    return proc


def test_wait_answers_with_the_status_another_thread_read() -> None:
    assert _racing().wait(timeout=1.0) == 3


def test_poll_answers_with_the_status_another_thread_read() -> None:
    assert _racing().poll() == 3


def test_the_exit_message_is_read_once_and_a_silent_process_times_out() -> None:
    ours, theirs = _pair()
    proc = WarmProcess(1, ours, io.BytesIO(), io.BytesIO())
    assert proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.05)
    theirs.send(b'{"exit": 7}')
    assert proc.wait(timeout=1.0) == 7 and proc.poll() == 7 and proc.wait() == 7
