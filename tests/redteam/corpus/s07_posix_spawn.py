# ruff: noqa
# mypy: ignore-errors
"""Escape through ``os.posix_spawn`` with ``setsid``: a shell that sleeps, then writes.

No Python runs in the child at all: it is ``/bin/sh`` in its own session.
"""
import os

# The evaluation's own working folder: the one place the host still sees after it ends
# (the temporary folder is a private tmpfs that dies with the evaluation).
MARKER = os.path.join(os.getcwd(), "escaped")
_started = []


def scale(x):
    if not _started:
        cmd = f"trap '' TERM HUP; sleep 8; echo escaped > {MARKER}"
        _started.append(os.posix_spawn("/bin/sh", ["sh", "-c", cmd], dict(os.environ), setsid=True))
    return x * 2 + 1
