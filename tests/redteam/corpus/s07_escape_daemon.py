# ruff: noqa
# mypy: ignore-errors
"""Escape: a double-forked, setsid daemon started from code that claims a library file.

The function that forks is rebuilt with ``co_filename`` set to a standard-library path,
so attribution by file name blames the library; the daemon sleeps past the evaluation
and then writes a marker file named by the environment of the test that runs it.
"""
import os
import threading
import types

MARKER = os.path.join(os.environ.get("TMPDIR", "/tmp"), "aka-escape-marker")


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
