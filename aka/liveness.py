"""Whether some process is still driving a run: a lock held for as long as it works on it.

A run without ``RunFinished`` is either being worked on or was killed; the events alone
cannot tell the two apart (a killed process writes nothing more). So every process that
drives a run (``aka run``, ``aka resume``, :func:`aka.orchestrator.drive`) holds an
``flock`` on its own file under ``<ledger>/sidecar/runs/<run_id>/``. The kernel drops the
lock when the process dies, however it dies, so a reader that can take the lock knows
the holder is gone: no heartbeat, no clock. (Distributed workers are also visible
through their claim leases; ``aka status`` checks both.)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def holders_dir(root: Path, run_id: str) -> Path:
    """Where the lock files of a run's drivers lie."""
    return Path(root) / "sidecar" / "runs" / _SAFE.sub("_", run_id)


@contextlib.contextmanager
def holding(root: Path | None, run_id: str) -> Iterator[None]:
    """Mark this process as driving ``run_id`` until the block ends (or the process dies).

    ``root`` None (an in-memory ledger) holds nothing: no other process can look.
    """
    if root is None:
        yield
        return
    folder = holders_dir(root, run_id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{os.getpid()}-{secrets.token_hex(4)}.lock"
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)


def is_driven(root: Path | None, run_id: str) -> bool:
    """Whether a live process holds one of the run's locks (True when nobody can tell)."""
    if root is None:
        return True
    try:
        names = os.listdir(holders_dir(root, run_id))
    except FileNotFoundError:
        return False
    for name in names:
        try:
            fd = os.open(holders_dir(root, run_id) / name, os.O_RDONLY)
        except FileNotFoundError:
            continue  # its holder finished between the listing and now
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
    return False
