"""The timing gate: nothing the evaluator started ahead runs on a device while it is timed.

Prepared processes (:mod:`aka.eval._prepare`: the spares of :mod:`aka.eval._spares`, and
an evaluation's checker while its candidate runs) start CUDA and run a few operations
before they have a request, so that the next evaluation does not wait for that. They
may do so while the current candidate compiles and checks, never while it is timed: a
second process's start-up on the same GPU takes time slices and memory bandwidth that a
sample window would count. So a candidate process asks before timing (a ``gate`` mark
on its signed result channel, then it waits for one byte on stdin), and the evaluator
first stops (``SIGSTOP``) every prepared process of that device that has no request yet,
then answers. They continue (``SIGCONT``) once the candidate process has exited, and
any started meanwhile is stopped as soon as it is registered. A stopped process holds
no work of its own on the GPU beyond the tiny operations it may have queued, and the
candidate's warm-up comes before its first sample.

Only harness code is ever stopped: a prepared process runs nothing of a candidate
before its request arrives, and :func:`release` continues it before it gets one.
A :class:`Gate` belongs to the evaluator's :class:`aka.eval._workers.Workers`;
``Gate(stop=False)`` (the ``gate`` switch off) answers every request at once and stops
nothing (to measure what the gate is worth; never needed otherwise).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

__all__ = ["Gate"]


def _signal(pid: int, sig: signal.Signals) -> None:
    """Signal the process's whole group: an evaluation process runs its work in a child
    (PID 1 of its own PID namespace), which must stop and continue with it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            os.kill(pid, sig)


class Gate:
    """Per device: which prepared processes wait, and whether a candidate is timing."""

    def __init__(self, *, stop: bool = True) -> None:
        self.stop = stop
        self._lock = threading.Lock()
        self._waiting: dict[str, set[int]] = {}  # device -> prepared pids without a request
        self._closed: dict[str, int] = {}  # device -> candidate processes timing now

    def _stop(self, pid: int) -> None:
        if self.stop:
            _signal(pid, signal.SIGSTOP)

    def register(self, device: str, pid: int) -> None:
        """A prepared process started on ``device``; stopped at once if the device is timed."""
        with self._lock:
            self._waiting.setdefault(device, set()).add(pid)
            if self._closed.get(device):
                self._stop(pid)

    def release(self, device: str, pid: int) -> None:
        """The process is about to get its request (or to be stopped for good): let it run."""
        with self._lock:
            self._waiting.get(device, set()).discard(pid)
            _signal(pid, signal.SIGCONT)

    def close(self, device: str) -> None:
        """A candidate process on ``device`` is about to time: stop every waiting process."""
        with self._lock:
            self._closed[device] = self._closed.get(device, 0) + 1
            for pid in self._waiting.get(device, set()):
                self._stop(pid)

    def open(self, device: str) -> None:
        """The candidate process that closed the gate is gone: let the waiting ones go on."""
        with self._lock:
            self._closed[device] = max(0, self._closed.get(device, 0) - 1)
            if not self._closed[device]:
                for pid in self._waiting.get(device, set()):
                    _signal(pid, signal.SIGCONT)

    def closed(self, device: str) -> bool:
        """Whether a candidate process on ``device`` is timing now."""
        with self._lock:
            return bool(self._closed.get(device))

    def waiting(self, device: str) -> set[int]:
        """Pids of the prepared processes on ``device`` that have no request yet."""
        with self._lock:
            return set(self._waiting.get(device, set()))
