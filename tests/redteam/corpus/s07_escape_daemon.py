# ruff: noqa
# mypy: ignore-errors
"""Escape: a double-forked, setsid daemon started from code that claims a library file.

The function that forks is rebuilt with ``co_filename`` set to a standard-library path,
so attribution by file name blames the library; the daemon sleeps past the evaluation
and then writes a marker file in its kernel cache.
"""
import os
import threading
import types

# The candidate tree's own kernel cache: the one folder its processes may write that the
# host still sees after it ends (every other mount is read-only; the temporary and working
# folders are private tmpfs that die with the evaluation).
MARKER = os.path.join(os.environ.get("TRITON_CACHE_DIR") or os.getcwd(), "escaped")


def _spawn():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            import time

            time.sleep(4.0)
            with open(MARKER, "w") as f:
                f.write("escaped")
            os._exit(0)
        os._exit(0)


_spawn = types.FunctionType(
    _spawn.__code__.replace(co_filename=threading.__file__), globals(), "_spawn"
)
_started = []


def scale(x):
    if not _started:
        _started.append(1)
        _spawn()
    return x * 2 + 1
