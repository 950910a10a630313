"""A value measured once per key for the evaluator's lifetime.

What an evaluation learns from running the task's baseline alone (its clean timing, the
operators its own code calls, the dtypes it returns) depends only on the task, the device
and the settings, and costs a process: evaluations of one task share it. Concurrent
evaluations of the same key wait for the one measuring it rather than measure it again;
a failed measurement (``None``) is not kept, so the next evaluation tries again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Once"]

T = TypeVar("T")


class Once(Generic[T]):
    """Values by key, each measured at most once at a time and kept (the oldest dropped
    past ``limit`` keys: tasks x devices x settings one evaluator sees)."""

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._kept: dict[str, T] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def get(self, key: str, measure: Callable[[], T | None]) -> T | None:
        """The value kept for ``key``, or what ``measure`` returns now (kept unless
        ``None``)."""
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key in self._kept:
                return self._kept[key]
            got = measure()
            if got is not None:
                self.put(key, got)
            return got

    def put(self, key: str, value: T) -> None:
        """Keep ``value`` for ``key`` (replacing what was kept)."""
        with self._guard:
            self._kept.pop(key, None)
            if len(self._kept) >= self.limit:
                self._kept.pop(next(iter(self._kept)))
            self._kept[key] = value

    def __contains__(self, key: str) -> bool:
        return key in self._kept

    def keys(self) -> list[str]:
        """The keys kept, oldest first."""
        return list(self._kept)
