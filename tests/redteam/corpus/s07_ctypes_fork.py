# ruff: noqa
# mypy: ignore-errors
"""Escape through libc's ``fork`` and ``setsid`` called with ``ctypes``.

Python's ``os.fork`` (and its audit event) is never used; the child double-forks the
same way and the grandchild writes a marker after the evaluation.
"""
import ctypes
import os
import time

# The candidate tree's own kernel cache: the one folder its processes may write that the
# host still sees after it ends (every other mount is read-only; the temporary and working
# folders are private tmpfs that die with the evaluation).
MARKER = os.path.join(os.environ.get("TRITON_CACHE_DIR") or os.getcwd(), "escaped")
_libc = ctypes.CDLL(None)
_started = []


def _spawn():
    if _libc.fork() == 0:
        _libc.setsid()
        if _libc.fork() == 0:
            time.sleep(8)
            with open(MARKER, "w") as f:
                f.write("escaped")
        os._exit(0)


def scale(x):
    if not _started:
        _started.append(1)
        _spawn()
    return x * 2 + 1
