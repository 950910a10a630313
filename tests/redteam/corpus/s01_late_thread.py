# ruff: noqa
# mypy: ignore-errors
"""Frame walk from a thread started on the first call, that keeps walking later.

Checks and timing happen after the first call returns; a thread that wakes every
millisecond and scans every stack can reach frames that only exist then. It empties
lists of records and flags it sees. The kernel is wrong (``2x``).
"""
import sys
import threading
import time

_started = []


def _walker():
    me = threading.get_ident()
    while True:
        for ident, frame in sys._current_frames().items():
            while frame is not None and ident != me:
                for name, value in list(frame.f_locals.items()):
                    if isinstance(value, list) and name in ("records", "flags", "cases", "errors"):
                        value.clear()
                frame = frame.f_back
        time.sleep(0.001)


def scale(x):
    if not _started:
        _started.append(threading.Thread(target=_walker, daemon=True))
        _started[0].start()
    return x * 2
