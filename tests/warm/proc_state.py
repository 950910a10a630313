"""A process's scheduler state from ``/proc``, for tests that stop and continue processes."""

from __future__ import annotations

import time


def state(pid: int) -> str:
    """The state letter of ``/proc/<pid>/stat`` (``T``: stopped)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def settles(pid: int, stopped: bool, timeout: float = 5.0) -> bool:
    """Whether ``pid`` reaches (or leaves) the stopped state within ``timeout``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if (state(pid) == "T") == stopped:
            return True
        time.sleep(0.01)
    return False
