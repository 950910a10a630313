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
(:func:`aka.eval._warm.shutdown`).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from aka.eval import _warm

MODULES = ("aka.eval._child", "aka.eval._reference")

_lock = threading.Lock()
_spares: dict[str, tuple[str, Any]] = {}  # module -> (key, process)


def _key(device: str, isolate: bool) -> str:
    from aka.eval._proc import child_env

    return json.dumps([device, isolate, sorted(child_env(device).items())])


def take(module: str, device: str, isolate: bool) -> Any | None:
    """The spare ``module`` process for this device and isolation, or ``None``."""
    with _lock:
        item = _spares.pop(module, None)
    if item is None:
        return None
    key, proc = item
    if key == _key(device, isolate) and proc.alive():
        return proc
    proc.kill()
    return None


def refill(device: str, isolate: bool) -> None:
    """Start a prepared process of each module for the next evaluation (warm workers only)."""
    if not _warm.enabled():
        return
    from aka.eval._proc import prepared

    key = _key(device, isolate)
    for module in MODULES:
        with _lock:
            old = _spares.get(module)
        if old is not None and old[0] == key and old[1].alive():
            continue
        fresh = prepared(module, device, isolate)
        with _lock:  # another thread may have refilled meanwhile: the newest stays
            replaced = _spares.get(module)
            _spares[module] = (key, fresh)
        if replaced is not None:
            replaced[1].kill()


def waiting() -> dict[str, int]:
    """Module -> pid of each spare now waiting (for tests and ``aka bench eval``)."""
    with _lock:
        return {m: int(p.proc.pid) for m, (_, p) in _spares.items()}


def clear() -> None:
    """Stop every spare."""
    with _lock:
        items = list(_spares.values())
        _spares.clear()
    for _, proc in items:
        proc.kill()
