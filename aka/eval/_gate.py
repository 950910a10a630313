"""The timing gate: nothing the evaluator started ahead runs on a device while it is timed.

Prepared processes (:mod:`aka.eval._prepare`: the spares of :mod:`aka.eval._spares`, and
an evaluation's checker while its candidate runs) start CUDA and run a few operations
before they have a request, so that the next evaluation does not wait for that. They
may do so while the current candidate compiles and checks, never while it is timed: a
second process's start-up on the same GPU takes time slices and memory bandwidth that a
sample window would count. So a candidate process asks before timing (a ``gate`` mark
on its signed result channel, then it waits for one byte on stdin), and the evaluator
first stops (``SIGSTOP``) every prepared process of that device that has no request yet,
then answers. They continue (``SIGCONT``) once the candidate's sealed core reports its
last sample (its ``core_done`` frame; or once the process has exited, whichever comes
first), and any started meanwhile is stopped as soon as it is registered. A stopped
process holds no work of its own on the GPU beyond the tiny operations it may have
queued, and the candidate's warm-up comes before its first sample.

With several evaluations in flight on one device, the other evaluations' candidate and
checker processes are stopped too (wherever they are: compiling, checking, computing
references), and a second candidate that asks to time waits its turn: it times as soon
as the first has taken its last sample, while the first hands over its outputs and exits
(stopped meanwhile, like every other process of the device). A process stopped
mid-operation may leave kernels it already queued running on the GPU for a moment; the
timed candidate's warm-up calls come before its first sample. A prepared process runs
nothing of a candidate before its request arrives, and is continued before it gets one.
A :class:`Gate` belongs to the evaluator's :class:`aka.eval._workers.Workers`;
``Gate(stop=False)`` (the ``gate`` switch off) answers every request at once and stops
nothing (to measure what the gate is worth; never needed otherwise).

Evaluators in several processes on one GPU (``aka tasks validate --jobs``) share a
folder (:mod:`aka.eval._hostgate`, ``AKA_EVAL_HOST_GATE``): a gate given one takes the
device's lock there before it grants, which stops every other member's processes, and
frees it once its candidate is gone.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import threading
from collections.abc import Callable, Iterator

from aka.eval._hostgate import HostGate

__all__ = ["Gate"]

_TOKENS = itertools.count(-1, -1)
"""Timers that are not processes (:meth:`Gate.hold`): negative, so never signalled."""


def _signal(pid: int, sig: signal.Signals) -> None:
    """Signal the process's whole group: an evaluation process runs its work in a child
    (PID 1 of its own PID namespace), which must stop and continue with it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            os.kill(pid, sig)


class Gate:
    """Per device: who waits, who evaluates, and the one candidate process timing now.

    Three kinds of process are tracked per device: *prepared* ones without a request
    (:meth:`register`), *active* ones evaluating (:meth:`activate`: candidate and checker
    processes with a request, possibly several evaluations in flight) and the *timer*,
    the candidate process whose ``gate`` request was granted. While a timer runs, every
    other tracked process of the device is stopped; a second candidate asking meanwhile
    is queued (it is stopped anyway, so it asks at most once) and granted when the timer
    has taken its last sample (:meth:`timed`: its core says so) or is gone. Compiles and
    correctness runs of several evaluations thus overlap, and timing stays exclusive per
    device.
    """

    def __init__(self, *, stop: bool = True, host: HostGate | None = None) -> None:
        self.stop = stop
        self.host = host if stop else None
        self._lock = threading.Lock()
        self._waiting: dict[str, set[int]] = {}  # device -> prepared pids without a request
        self._active: dict[str, set[int]] = {}  # device -> evaluating pids
        self._timer: dict[str, int] = {}  # device -> the candidate process timing now
        self._queue: dict[str, list[tuple[int, Callable[[], None]]]] = {}

    def _stop(self, pid: int) -> None:
        if self.stop:
            _signal(pid, signal.SIGSTOP)

    def _others(self, device: str, pid: int) -> set[int]:
        return (self._waiting.get(device, set()) | self._active.get(device, set())) - {pid}

    def register(self, device: str, pid: int) -> None:
        """A prepared process started on ``device``; stopped at once if the device is timed."""
        with self._lock:
            self._join(device)
            self._waiting.setdefault(device, set()).add(pid)
            if device in self._timer:
                self._stop(pid)

    def join(self, device: str) -> None:
        """This process itself works on ``device`` from now on (reference checks, a task's
        own commands): with a host gate, another member's timing stops it and everything
        it started, as it stops the members' candidate processes.

        A member otherwise joins only when its first evaluation process starts, and what
        it runs on the device before that would load the device under another's timing.
        """
        with self._lock:
            self._join(device)

    def release(self, device: str, pid: int) -> None:
        """The process is about to get its request (or to be stopped for good): let it run."""
        with self._lock:
            self._waiting.get(device, set()).discard(pid)
            _signal(pid, signal.SIGCONT)

    def activate(self, device: str, pid: int) -> None:
        """A process got its request on ``device``; it runs unless the device is timed."""
        with self._lock:
            self._join(device)
            self._waiting.get(device, set()).discard(pid)
            self._active.setdefault(device, set()).add(pid)
            if device in self._timer and self._timer[device] != pid:
                self._stop(pid)
            else:
                _signal(pid, signal.SIGCONT)

    def close(self, device: str, pid: int, grant: Callable[[], None]) -> None:
        """Candidate ``pid`` asks to time: ``grant`` is called once every other process of
        the device is stopped (now, or when the candidate timing before it is gone)."""
        if not self.stop:  # the gate switched off: answer at once, stop nothing
            grant()
            return
        with self._lock:
            if device in self._timer:
                self._queue.setdefault(device, []).append((pid, grant))
                return
            self._start(device, pid, grant)

    def timed(self, device: str, pid: int) -> None:
        """Candidate ``pid``'s core has taken its last sample: the device is handed over
        now, not once the process has exited. It still evaluates (hands over its
        outputs, exits) as any other process of the device does: stopped while the next
        candidate times, if one is queued, with whatever it queued on the GPU finishing
        during that one's warm-up, as for every process the gate stops."""
        with self._lock:
            if self._timer.get(device) == pid:
                self._hand_over(device, pid)

    def _hand_over(self, device: str, pid: int) -> None:
        """The timer ``pid`` is done: the next in the queue times, or everything goes on."""
        del self._timer[device]
        if self.host is not None:
            self.host.release(device)  # other members take their turn first, if waiting
        queue = self._queue.get(device, [])
        if queue:
            self._start(device, *queue.pop(0))
            return
        for other in self._others(device, pid):
            _signal(other, signal.SIGCONT)

    def _join(self, device: str) -> None:
        if self.host is not None:
            self.host.join(device)

    def _start(self, device: str, pid: int, grant: Callable[[], None]) -> None:
        if self.host is not None:
            # Blocks while another member times; this process is stopped meanwhile anyway.
            self.host.acquire(device)
        self._timer[device] = pid
        for other in self._others(device, pid):
            self._stop(other)
        if pid > 0:  # a process, not a token (hold)
            _signal(pid, signal.SIGCONT)
        grant()

    @contextlib.contextmanager
    def hold(self, device: str) -> Iterator[None]:
        """Time in this process: every tracked process of ``device`` (and every other
        member's, with a host gate) is stopped inside the block, which waits its turn.

        For timing that this process runs itself rather than a candidate process: a
        command-driven task's performance commands are this process's children, which
        no gate tracks, so they run while everything else on the device is stopped.
        """
        token = next(_TOKENS)  # one per hold: several threads may hold in turn
        granted = threading.Event()
        self.close(device, token, granted.set)
        granted.wait()
        try:
            yield
        finally:
            self.open(device, token)

    def open(self, device: str, pid: int) -> None:
        """Process ``pid`` is gone: it no longer evaluates, times or waits for its turn."""
        with self._lock:
            self._active.get(device, set()).discard(pid)
            queue = self._queue.get(device, [])
            queue[:] = [(p, g) for p, g in queue if p != pid]
            if self._timer.get(device) == pid:
                self._hand_over(device, pid)

    def shutdown(self) -> None:
        """Leave the host gate's folder (its locks freed, its member files removed)."""
        with self._lock:
            if self.host is not None:
                self.host.leave()

    def closed(self, device: str) -> bool:
        """Whether a candidate process on ``device`` is timing now."""
        with self._lock:
            return device in self._timer

    def timer(self, device: str) -> int | None:
        """The pid of the candidate process timing on ``device`` now, if any."""
        with self._lock:
            return self._timer.get(device)

    def waiting(self, device: str) -> set[int]:
        """Pids of the prepared processes on ``device`` that have no request yet."""
        with self._lock:
            return set(self._waiting.get(device, set()))

    def active(self, device: str) -> set[int]:
        """Pids of the processes evaluating on ``device`` (the timer included)."""
        with self._lock:
            return set(self._active.get(device, set()))
