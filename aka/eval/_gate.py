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
``AKA_EVAL_GATE=0`` in the evaluator's environment answers every request at once and
stops nothing (to measure what the gate is worth; never needed otherwise).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

__all__ = ["close", "closed", "open_", "register", "release", "waiting"]

GATE_ENV = "AKA_EVAL_GATE"

_lock = threading.Lock()
_waiting: dict[str, set[int]] = {}  # device -> pids of prepared processes without a request
_closed: dict[str, int] = {}  # device -> candidate processes timing now (0 or 1 in practice)


def _signal(pid: int, sig: signal.Signals) -> None:
    """Signal the process's whole group: an evaluation process runs its work in a child
    (PID 1 of its own PID namespace), which must stop and continue with it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            os.kill(pid, sig)


def _stop(pid: int) -> None:
    if os.environ.get(GATE_ENV, "1") != "0":
        _signal(pid, signal.SIGSTOP)


def register(device: str, pid: int) -> None:
    """A prepared process started on ``device``; stopped at once if the device is timed."""
    with _lock:
        _waiting.setdefault(device, set()).add(pid)
        if _closed.get(device):
            _stop(pid)


def release(device: str, pid: int) -> None:
    """The process is about to get its request (or to be stopped for good): let it run."""
    with _lock:
        _waiting.get(device, set()).discard(pid)
        _signal(pid, signal.SIGCONT)


def close(device: str) -> None:
    """A candidate process on ``device`` is about to time: stop every waiting process."""
    with _lock:
        _closed[device] = _closed.get(device, 0) + 1
        for pid in _waiting.get(device, set()):
            _stop(pid)


def open_(device: str) -> None:
    """The candidate process that closed the gate is gone: let the waiting ones go on."""
    with _lock:
        _closed[device] = max(0, _closed.get(device, 0) - 1)
        if not _closed[device]:
            for pid in _waiting.get(device, set()):
                _signal(pid, signal.SIGCONT)


def closed(device: str) -> bool:
    """Whether a candidate process on ``device`` is timing now."""
    with _lock:
        return bool(_closed.get(device))


def waiting(device: str) -> set[int]:
    """Pids of the prepared processes on ``device`` that have no request yet."""
    with _lock:
        return set(_waiting.get(device, set()))
