# ruff: noqa
# mypy: ignore-errors
"""Escape through ``os.posix_spawn`` with ``setsid``: a shell that sleeps, then writes.

No Python runs in the child at all: it is ``/bin/sh`` in its own session.
"""
import os

# The candidate tree's own kernel cache: the one folder its processes may write that the
# host still sees after it ends (every other mount is read-only; the temporary and working
# folders are private tmpfs that die with the evaluation).
MARKER = os.path.join(os.environ.get("TRITON_CACHE_DIR") or os.getcwd(), "escaped")
_started = []


def scale(x):
    if not _started:
        cmd = f"trap '' TERM HUP; sleep 8; echo escaped > {MARKER}"
        _started.append(os.posix_spawn("/bin/sh", ["sh", "-c", cmd], dict(os.environ), setsid=True))
    return x * 2 + 1
