"""The evaluator's process layer as one object: switches, zygotes, spares and the gate.

A :class:`Workers` is what an evaluating process holds: the :class:`Switches` it was
configured with, the warm zygotes (:mod:`aka.eval._warm`), the spare processes of the
next evaluation (:mod:`aka.eval._spares`) and the timing gate (:mod:`aka.eval._gate`).
It is passed down to every :class:`aka.eval._proc.Proc` it starts, so nothing below it
reads a module global or the environment.

The edge of a process (the CLI, an API object, a trainer's reward function) chooses the
switches once with :func:`configure`; library callers that configure nothing get
:func:`current`, built from the environment on first use. Zygotes and spares are
stopped by :meth:`Workers.shutdown`, at exit at the latest.
"""

from __future__ import annotations

import atexit
import contextlib
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aka.eval._gate import Gate
from aka.eval._hostgate import HostGate
from aka.eval._memory import ADMIT_FREE, gpu_free_fraction
from aka.eval._spares import Spares
from aka.eval._switches import Switches
from aka.eval._warm import Zygotes

if TYPE_CHECKING:
    from aka.eval._proc import Proc
    from aka.eval._reuse import ServingChecker

__all__ = ["Workers", "configure", "current", "for_run"]


ADMIT_POLL_S = 0.5
"""How often an evaluation waiting for the device's memory asks again."""


class Share:
    """How one evaluation shared its device (:meth:`Workers.evaluating`)."""

    crowded: bool = False
    """Whether another evaluation ran on the device while this one did."""


class Workers:
    """Everything that starts and coordinates evaluation processes for one evaluator."""

    def __init__(self, switches: Switches | None = None,
                 free: Callable[[str], float | None] = gpu_free_fraction) -> None:  # fmt: skip
        """Evaluation processes for this process, which becomes non-dumpable: the verdicts
        are decided here, and a candidate's process of the same user could otherwise
        write its memory (:func:`aka.eval._contain.not_dumpable`).

        ``free``: the fraction of a device's memory free now (None: unknown), which an
        evaluation starting beside others waits on (:meth:`evaluating`)."""
        if sys.platform.startswith("linux"):
            from aka.eval._contain import not_dumpable

            not_dumpable()
        self.switches = switches or Switches()
        host = self.switches.host_gate
        self.gate = Gate(stop=self.switches.gate, host=HostGate(host) if host else None)
        self.zygotes = Zygotes()
        self.spares = Spares(self.prepared)
        self._count = threading.Condition()
        self._in_flight: dict[str, int] = {}  # device -> evaluations running on it
        self._started: dict[str, int] = {}  # device -> evaluations ever started on it
        self._alone: dict[str, int] = {}  # device -> evaluations waiting for it, or on it, alone
        self._free = free
        self._floor: dict[str, int] = {}  # device -> spares kept waiting at least (prepare)
        self._admitting: dict[str, threading.Lock] = {}  # per device: one waits for memory

    @property
    def warm(self) -> bool:
        """Whether processes are forked from a zygote (else fresh interpreters)."""
        return self.switches.warm

    def start(self, module: str, *, cwd: Path, device: str, isolate: bool,
              cand: Path | None = None, caches: dict[str, str] | None = None) -> Proc:  # fmt: skip
        """A spare prepared for this device and isolation if one waits, else a new process
        (``cand``: the tree a candidate process imports, which keys its kernel caches;
        ``caches``: folders of its own in their place)."""
        from aka.eval._proc import Proc

        spare = self.spares.take(module, device, isolate)
        if spare is not None:
            spare.released = False  # a checker that served before is this evaluation's now
            spare.lease += 1
            spare.caches = caches
            return spare
        return Proc(module, cwd=cwd, device=device, workers=self, cand=cand, caches=caches)

    def prepared(self, module: str, device: str, isolate: bool) -> Proc:
        """A process started prepared, ahead of its evaluation (the spares' factory); a
        checker so started serves evaluation after evaluation (:mod:`aka.eval._reuse`)."""
        from aka.eval._proc import Proc
        from aka.eval._reuse import CHECKER, ServingChecker

        if module == CHECKER:
            return ServingChecker(device=device, workers=self, isolate=isolate)
        return Proc(module, cwd=Path(tempfile.gettempdir()), device=device, workers=self,
                    prepared=isolate)  # fmt: skip

    def keep(self, proc: ServingChecker) -> None:
        """A checker done with its evaluation (reported, or never asked): back among the
        device's spares if it can serve again and fewer than the depth :meth:`refill`
        keeps wait, else stopped. It waits as a prepared process again: stopped while a
        candidate of the device times."""
        depth = 0
        if proc.reusable():
            pid = proc.proc.pid
            self.gate.open(proc.device, pid)
            self.gate.register(proc.device, pid)
            depth = self._depth(proc.device)
        if not self.spares.put(proc.module, proc.device, proc.isolate, proc, depth):
            proc.kill()

    def done_with(self, proc: Proc, lease: int | None = None) -> None:
        """An evaluation's process it did not hand back itself: a checker never asked goes
        back among the spares (:meth:`keep`), anything else is stopped. ``lease``: the
        process's :attr:`~aka.eval._proc.Proc.lease` when the evaluation took it; a checker
        handed to another evaluation since (it reported, went back among the spares and
        was taken again) is that one's, and left alone. Given back twice, it waited among
        the spares while serving, and two evaluations at a time read one checker's
        reports, each under the other's key: an honest candidate flagged
        ``result_channel_tamper`` at offset 0 (2 of 40 at 12 in flight on an H100)."""
        from aka.eval._reuse import ServingChecker

        if lease is not None and proc.lease != lease:
            return
        if isinstance(proc, ServingChecker) and not proc.released:
            proc.released = True
            self.keep(proc)
        elif not proc.released:
            proc.kill()

    @contextlib.contextmanager
    def evaluating(self, device: str, *, alone: bool = False) -> Iterator[Share]:
        """One evaluation runs on ``device`` inside the block: it counts toward how many
        spares wait for the evaluations to come (:meth:`refill`).

        ``alone``: wait until no other evaluation runs on the device, and let none start
        until the block ends (an evaluation that failed for want of the device's memory
        with others in flight is run again so, :func:`aka.eval._pipeline.run_job`).
        Evaluations that would start meanwhile wait. The :class:`Share` yielded says,
        once the block ends, whether another evaluation ran on the device beside it.

        An evaluation that would start beside others on a GPU first waits until
        :data:`aka.eval._memory.ADMIT_FREE` of its memory is free (or none is left
        running), one such start at a time per device.
        """
        share = Share()
        if not alone:
            self._admit(device)
        with self._count:
            if alone:
                self._alone[device] = self._alone.get(device, 0) + 1
                self._count.wait_for(lambda: not self._in_flight.get(device))
            else:
                self._count.wait_for(lambda: not self._alone.get(device))
            share.crowded = bool(self._in_flight.get(device))
            self._in_flight[device] = self._in_flight.get(device, 0) + 1
            self._started[device] = started = self._started.get(device, 0) + 1
        try:
            yield share
        finally:
            with self._count:
                self._in_flight[device] -= 1
                share.crowded = share.crowded or self._started[device] > started
                if alone:
                    self._alone[device] -= 1
                self._count.notify_all()

    def _admit(self, device: str) -> None:
        """Wait while others run on ``device`` and too little of its memory is free."""
        with self._count:
            turn = self._admitting.setdefault(device, threading.Lock())
        with turn:
            while (
                self.in_flight(device) and (f := self._free(device)) is not None and f < ADMIT_FREE
            ):
                time.sleep(ADMIT_POLL_S)

    def in_flight(self, device: str) -> int:
        """Evaluations running on ``device`` now (:meth:`evaluating` blocks)."""
        with self._count:
            return self._in_flight.get(device, 0)

    def refill(self, device: str, isolate: bool) -> None:
        """Start the next evaluations' processes now (warm workers only): one of each per
        evaluation in flight on ``device``, at least one, at least as many as
        :meth:`prepare` asked for (:mod:`aka.eval._spares`)."""
        if self.warm:
            self.spares.refill(device, isolate, depth=self._depth(device))

    def _depth(self, device: str) -> int:
        """How many of each process wait for ``device``: one per evaluation in flight
        there, at least one, at least as many as :meth:`prepare` asked for."""
        with self._count:
            floor = self._floor.get(device, 1)
        return max(floor, self.in_flight(device))

    def refill_behind(self, device: str, isolate: bool) -> Callable[[], None]:
        """:meth:`refill` on a thread of its own; returns what waits for it to end (and
        raises what it raised).

        An evaluation starts its successors' processes so, and waits for them only once
        its own candidate has run: each start is a fork by the zygote, one at a time, and
        with eight evaluations in flight each one's candidate waited for up to sixteen
        forks before it got its request (the first eight's start stage 0.16-0.27 s on an
        H100, ``docs/benchmarks.md``)."""
        if not self.warm:
            return lambda: None
        failed: list[BaseException] = []

        def run() -> None:
            try:
                self.refill(device, isolate)
            except BaseException as exc:  # raised in the evaluation's thread instead
                failed.append(exc)

        thread = threading.Thread(target=run, name="aka-refill", daemon=True)
        thread.start()

        def joined() -> None:
            thread.join()
            if failed:
                raise failed[0]

        return joined

    def prepare(self, device: str, isolate: bool, depth: int, *, wait_s: float = 0.0) -> bool:
        """Keep ``depth`` of each evaluation process waiting for ``device`` from now on, and
        start them now (warm workers only); with ``wait_s``, wait that long at most for
        them to finish starting. Returns whether every spare waits ready.

        A caller that sends bursts of ``depth`` evaluations at once (a trainer's batch, an
        evaluator's in-flight share of a device) calls this once. Without it the first burst
        finds one spare: the evaluations that start beside the first all fork and start
        CUDA inside their own time, several seconds each on a GPU with eight at once
        (docs/benchmarks.md)."""
        if not self.warm or depth < 1:
            return False
        with self._count:
            self._floor[device] = max(self._floor.get(device, 1), depth)
        self.spares.refill(device, isolate, depth=depth)
        return self.spares.wait_ready(wait_s)

    def zygote_status(self, device: str) -> dict[str, Any]:
        """The zygote for ``device``'s children: pid, whether it started CUDA, modules."""
        from aka.eval._proc import child_env

        return self.zygotes.status(child_env(device))

    def shutdown(self) -> None:
        """Stop every spare and zygote (a later evaluation starts them again)."""
        self.spares.clear()
        self.zygotes.close()
        self.gate.shutdown()


_lock = threading.Lock()
_current: Workers | None = None


def current() -> Workers:
    """This process's workers: as configured, else from the environment (first use)."""
    global _current
    with _lock:
        if _current is None:
            _current = Workers(Switches.from_env())
        return _current


def configure(switches: Switches | None = None, *, warm: bool | None = None) -> Workers:
    """Replace this process's workers (the old ones are shut down); returns the new ones.

    ``switches`` defaults to the environment's; ``warm`` overrides that one switch
    (``None``: leave it as the switches say), for a config field or a CLI flag.
    """
    global _current
    chosen = (switches or Switches.from_env()).with_warm(warm)
    with _lock:
        old, _current = _current, Workers(chosen)
    if old is not None:
        old.shutdown()
    return _current


def for_run(warm: bool) -> Workers:
    """This process's workers with ``warm`` as a run's config sets it.

    Whoever executes a run's attempts (the inline driver, a worker, held-out checks)
    evaluates as the run recorded; the workers are replaced only when that differs.
    """
    workers = current()
    return workers if workers.warm == warm else configure(workers.switches, warm=warm)


def _shutdown() -> None:
    with _lock:
        workers = _current
    if workers is not None:
        workers.shutdown()


atexit.register(_shutdown)
