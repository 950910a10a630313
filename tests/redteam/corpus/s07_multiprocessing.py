# ruff: noqa
# mypy: ignore-errors
"""Escape through ``multiprocessing``: a forked, non-daemon worker in its own session.

The worker calls ``setsid`` and ignores SIGTERM and SIGHUP, so neither a process-group
kill nor the end of the session reaches it; it writes a marker after the evaluation.
"""
import multiprocessing
import os
import signal
import time

# The candidate tree's own kernel cache: the one folder its processes may write that the
# host still sees after it ends (every other mount is read-only; the temporary and working
# folders are private tmpfs that die with the evaluation).
MARKER = os.path.join(os.environ.get("TRITON_CACHE_DIR") or os.getcwd(), "escaped")


def _worker():
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    time.sleep(8)
    with open(MARKER, "w") as f:
        f.write("escaped")


_started = []


def scale(x):
    if not _started:
        p = multiprocessing.get_context("fork").Process(target=_worker, daemon=False)
        p.start()
        _started.append(p)
    return x * 2 + 1
