"""Spare evaluation processes: the next evaluation's, started while this one runs.

With warm workers on, as soon as an evaluation has its candidate process, the evaluator
forks a *prepared* candidate process and a prepared checker process
(:mod:`aka.eval._prepare`) for the next evaluation on the same device. They start CUDA
and isolate themselves while the current candidate loads, compiles and checks, are
stopped while it times (:mod:`aka.eval._gate`) and go on while its checker runs; the
next evaluation takes them instead of forking its own and pays neither start-up. A spare
is used once, by one evaluation; it is taken only for the same device, isolation
setting and environment it was started with, and one that has died is replaced by a
process started on demand. Spares are stopped with the zygotes
(:meth:`aka.eval._workers.Workers.shutdown`).
"""

from __future__ import annotations

import json
import threading
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
    """At most one waiting process per module; ``factory`` starts a prepared one."""

    def __init__(self, factory: Callable[[str, str, bool], Proc]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._spares: dict[str, tuple[str, Proc]] = {}  # module -> (key, process)

    def take(self, module: str, device: str, isolate: bool) -> Proc | None:
        """The spare ``module`` process for this device and isolation, or ``None``."""
        with self._lock:
            item = self._spares.pop(module, None)
        if item is None:
            return None
        key, proc = item
        if key == _key(device, isolate) and proc.alive():
            return proc
        proc.kill()
        return None

    def refill(self, device: str, isolate: bool) -> None:
        """Start a prepared process of each module for the next evaluation."""
        key = _key(device, isolate)
        for module in MODULES:
            with self._lock:
                old = self._spares.get(module)
            if old is not None and old[0] == key and old[1].alive():
                continue
            fresh = self._factory(module, device, isolate)
            with self._lock:  # another thread may have refilled meanwhile: the newest stays
                replaced = self._spares.get(module)
                self._spares[module] = (key, fresh)
            if replaced is not None:
                replaced[1].kill()

    def waiting(self) -> dict[str, int]:
        """Module -> pid of each spare now waiting (for tests and ``aka bench eval``)."""
        with self._lock:
            return {m: int(p.proc.pid) for m, (_, p) in self._spares.items()}

    def clear(self) -> None:
        """Stop every spare."""
        with self._lock:
            items = list(self._spares.values())
            self._spares.clear()
        for _, proc in items:
            proc.kill()
