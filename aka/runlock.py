"""The run lock: one process drives a run at a time, on any runner.

``aka run --run-id X`` and ``aka resume X`` hold ``sidecar/locks/<run_id>/try-N.lease``
while they drive the run (inline, or while their local, Docker or Slurm workers run).
It is the same lease file as an attempt claim (:mod:`aka.claims`): created with
``O_EXCL``, renewed by a heartbeat, taken over only as the next try number once it has
expired, so of two racing commands exactly one wins. A second command is refused with
the holder's pid and host. A holder that died stops blocking when its lease expires, or
at once when it ran on this host (its pid is gone). Workers started by hand with
``aka worker`` do not take the lock: they join through attempt claims, which keep every
attempt single-run whoever drives.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from aka.claims import Claim, LeaseInfo, _encode, _read_lease, _tries, _try_create
from aka.errors import InputError

if TYPE_CHECKING:
    from aka_ledger import Ledger

__all__ = [
    "RUN_ID_RE",
    "RunLockedError",
    "check_run_id",
    "hold_run",
    "lock_run",
    "locks_dir",
    "run_holder",
]

_RACES = 5


class RunLockedError(InputError):
    """Another live process drives this run. Exit code 2.

    Attributes:
        holder: the lease of the process that holds the run.
    """

    def __init__(self, run_id: str, holder: LeaseInfo):
        self.holder = holder
        until = datetime.fromtimestamp(holder.expires_at, tz=UTC).strftime("%H:%M:%S UTC")
        super().__init__(
            f"run {run_id!r} is being driven by pid {holder.pid or '?'} on host "
            f"{holder.host or '?'} ({holder.worker_id}); its lock is renewed until {until}",
            fix="wait for that command to finish (or stop it); a lock whose process died "
            "expires after its TTL, at once when it ran on this host",
        )


def locks_dir(root: Path, run_id: str) -> Path:
    """The directory of one run's lock leases."""
    return Path(root) / "sidecar" / "locks" / _encode(run_id)


def run_holder(root: Path, run_id: str, now: float | None = None) -> LeaseInfo | None:
    """The live holder of a run's lock, or None when the run is free."""
    key_dir = locks_dir(root, run_id)
    tries = _tries(key_dir)
    if not tries:
        return None
    info = _read_lease(key_dir, tries[-1])
    return info if info.live(time.time() if now is None else now) else None


@contextmanager
def lock_run(root: Path, run_id: str, *, holder: str, ttl_s: float = 60.0) -> Iterator[Claim]:
    """Hold ``run_id`` for the ``with`` block; raise :class:`RunLockedError` if it is held.

    Args:
        root: the ledger directory (the lock lives in its ``sidecar``).
        run_id: the run to lock.
        holder: a name for audits (written into the lease with host and pid).
        ttl_s: lease lifetime; a heartbeat renews it every ``ttl_s / 3``.

    Raises:
        RunLockedError: a live process holds the run; the message names its pid and host.
    """
    if ttl_s <= 0:
        raise ValueError(f"ttl_s must be positive, got {ttl_s}")
    key_dir = locks_dir(root, run_id)
    key_dir.mkdir(parents=True, exist_ok=True)
    claim: Claim | None = None
    for _ in range(_RACES):
        tries = _tries(key_dir)
        if tries:
            info = _read_lease(key_dir, tries[-1])
            if info.live(time.time()):
                raise RunLockedError(run_id, info)
        n = (tries[-1] if tries else 0) + 1
        candidate = Claim(key_dir, run_id, "", n, holder, ttl_s)
        if _try_create(key_dir, n, candidate._payload()):
            claim = candidate
            break
    if claim is None:  # lost every race: someone else just took it
        tries = _tries(key_dir)
        raise RunLockedError(run_id, _read_lease(key_dir, tries[-1]))
    claim.start()
    try:
        yield claim
    finally:
        claim.release(done=False)


RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_run_id(run_id: str, *, where: str = "--run-id") -> str:
    """A run id names folders (claims, locks, Slurm logs), so it is one safe path segment.

    Raises:
        InputError: anything but letters, digits, '.', '_' and '-' (starting with a
            letter or digit, at most 128 characters).
    """
    if not RUN_ID_RE.fullmatch(run_id):
        raise InputError(
            f"invalid run id {run_id!r}",
            where=where,
            fix="use letters, digits, '.', '_' and '-', starting with a letter or digit "
            "(no '/', at most 128 characters)",
        )
    return run_id


@contextmanager
def hold_run(ledger: Ledger, run_id: str, *, ttl_s: float = 60.0) -> Iterator[None]:
    """Hold the run's lock while this process drives it (:mod:`aka.runlock`).

    Raises:
        RunLockedError: another live process drives the run (named by pid and host).
    """
    check_run_id(run_id)
    if ledger.root is None:
        yield
        return
    with lock_run(ledger.root, run_id, holder=f"{socket.gethostname()}-{os.getpid()}", ttl_s=ttl_s):
        yield
