"""Spare evaluation processes: the next evaluations', started while these run.

With warm workers on, as soon as an evaluation has its candidate process, the evaluator
forks *prepared* candidate and checker processes (:mod:`aka.eval._prepare`) for the
evaluations to come on the same device. They start CUDA and isolate themselves while the
current candidates load, compile and check, are stopped while one times
(:mod:`aka.eval._gate`) and go on while its checker runs; the next evaluation takes them
instead of forking its own and pays neither start-up.

How many wait per module is the *depth*: as many as evaluations are in flight on the
device when the refill happens (:meth:`aka.eval._workers.Workers.evaluating`). With one
spare per module and eight evaluations in flight, the evaluations starting right after
the first found none and forked their own, paying the start-up inside their time (3.9 s
median start stage on the H200, docs/benchmarks.md); with as many as are in flight, any
evaluation that ends is replaced by one whose processes already wait. A serial evaluator
keeps one of each, as before. Spares beyond the depth (the load fell) are left waiting:
the next burst uses them, and shutdown stops them.

A candidate spare is used once, by one evaluation; a checker goes back among the spares
once it has reported (:mod:`aka.eval._reuse`: it runs no candidate code). A spare is
taken only for the same device, isolation setting and environment it was started with,
and one that has died is replaced by a process started on demand. Spares are stopped with the zygotes
(:meth:`aka.eval._workers.Workers.shutdown`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aka.eval._proc import Proc

__all__ = ["MODULES", "Spares"]

MODULES = ("aka.eval._candidate", "aka.eval._checker")


def _key(device: str, isolate: bool) -> str:
    from aka.eval._proc import child_env

    return json.dumps([device, isolate, sorted(child_env(device).items())])


class Spares:
    """Waiting processes per module, topped up to a depth; ``factory`` starts a prepared one."""

    def __init__(self, factory: Callable[[str, str, bool], Proc]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        # module -> (key, process) of each waiting spare, oldest first
        self._spares: dict[str, list[tuple[str, Proc]]] = {}
        # (module, key) -> processes that serve again, taken and not yet back (put)
        self._lent: dict[tuple[str, str], int] = {}

    def take(self, module: str, device: str, isolate: bool) -> Proc | None:
        """The oldest live spare ``module`` process for this device and isolation, or ``None``.

        Spares of other settings and dead ones met on the way are stopped and dropped.
        """
        key = _key(device, isolate)
        stale: list[Proc] = []
        found: Proc | None = None
        with self._lock:
            waiting = self._spares.get(module, [])
            for i, (k, proc) in enumerate(waiting):
                if k == key and proc.alive():
                    found = proc
                    del waiting[i]
                    break
            stale = [p for k, p in waiting if k != key or not p.alive()]
            waiting[:] = [(k, p) for k, p in waiting if p not in stale]
            if found is not None and found.serves_again:
                self._lent[module, key] = self._lent.get((module, key), 0) + 1
        for proc in stale:
            proc.kill()
        return found

    def refill(self, device: str, isolate: bool, depth: int = 1) -> None:
        """Top up each module's waiting processes for this device and isolation to ``depth``."""
        key = _key(device, isolate)
        for module in MODULES:
            with self._lock:
                waiting = self._spares.setdefault(module, [])
                stale = [p for k, p in waiting if k != key or not p.alive()]
                waiting[:] = [(k, p) for k, p in waiting if p not in stale]
                # a checker out with an evaluation comes back: not started again
                missing = depth - len(waiting) - self._lent.get((module, key), 0)
            for proc in stale:
                proc.kill()
            for _ in range(missing):
                fresh = self._factory(module, device, isolate)
                with self._lock:  # other threads may refill meanwhile: beyond the depth, stop
                    waiting = self._spares.setdefault(module, [])
                    keep = len(waiting) < depth
                    if keep:
                        waiting.append((key, fresh))
                if not keep:
                    fresh.kill()
                    break

    def put(self, module: str, device: str, isolate: bool, proc: Proc, depth: int) -> bool:
        """A process that serves again (a checker, :mod:`aka.eval._reuse`) is back from its
        evaluation: kept unless ``depth`` of its kind already wait (``depth`` 0: it
        cannot serve again), first in line, since it is ready where a spare may still be
        starting. Whether it was kept; the caller stops it if not."""
        key = _key(device, isolate)
        with self._lock:
            lent = self._lent.get((module, key), 0)
            if lent:
                self._lent[module, key] = lent - 1
            waiting = self._spares.setdefault(module, [])
            if sum(k == key for k, _ in waiting) >= depth:
                return False
            waiting.insert(0, (key, proc))
        return True

    def wait_ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until every waiting spare has done its start-up
        (or died); whether they all had."""
        end = time.monotonic() + timeout
        while True:
            with self._lock:
                pending = [p for w in self._spares.values() for _, p in w
                           if p.alive() and not p.ready()]  # fmt: skip
            if not pending:
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.05)

    def waiting(self) -> dict[str, list[int]]:
        """Module -> pids of the spares now waiting, oldest first (tests, ``aka bench eval``)."""
        with self._lock:
            return {m: [int(p.proc.pid) for _, p in w] for m, w in self._spares.items() if w}

    def clear(self) -> None:
        """Stop every spare."""
        with self._lock:
            items = [p for w in self._spares.values() for _, p in w]
            self._spares.clear()
        for proc in items:
            proc.kill()
