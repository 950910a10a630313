"""Claims without a central server: O_EXCL lease files with heartbeats on a shared directory.

Layout, under the ledger directory (local disk or NFS)::

    sidecar/claims/<run_id>/<attempt_key>/try-0001.lease   # JSON: worker, try, expires_at, ...
    sidecar/claims/<run_id>/<attempt_key>/try-0002.lease   # a takeover of an expired try 1
    sidecar/claims/<run_id>/<attempt_key>/try-0002.released  # given back without finishing
    sidecar/claims/<run_id>/<attempt_key>/done.<tag>       # that generation of the attempt finished

Why this shape: ``open(O_CREAT | O_EXCL)`` is atomic on local file systems and on NFSv3+,
so exactly one worker creates a given ``try-N.lease``. A takeover never deletes or edits
the expired lease; it creates the next try number, so two stealers race on one O_EXCL
and one loses. A holder that finds a later try than its own has lost its lease (its
heartbeat stalled past the expiry) and says so through :attr:`Claim.lost`. Expiry is wall
clock (``expires_at`` in the lease), so workers on several hosts need clocks in step to
well within the lease TTL (NTP does that). Nothing is ever deleted, so the directory is
also the audit trail of who held what and when.

A *tag* names a generation of an attempt (the worker uses the ledger's try number), so
a finished generation is never run again by a worker holding a stale plan, while the
next generation (a retry the ledger asked for) is still claimable. A live lease blocks
every generation of its key: while its holder lives, no one else runs that attempt.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = [
    "Claim",
    "LeaseInfo",
    "claim_next",
    "claims_dir",
    "key_state",
    "read_leases",
]

_TRY_RE = re.compile(r"^try-(\d{4,})\.lease$")
_SAFE = re.compile(r"[^A-Za-z0-9._=+-]")


def claims_dir(root: Path, run_id: str) -> Path:
    """The directory that holds every attempt's claims for one run."""
    return Path(root) / "sidecar" / "claims" / _encode(run_id)


def _encode(name: str) -> str:
    """A file-name-safe, reversible spelling of a key (``/`` and friends become ``%XX``)."""
    if name in {"", ".", ".."}:
        return "%" + name.encode().hex() if name else "%"
    return _SAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), name)


@dataclass(frozen=True)
class LeaseInfo:
    """One try's lease as read from disk.

    Attributes:
        try_number: 1 for the first claim, +1 per takeover.
        worker_id: who holds (or held) it.
        expires_at: wall-clock seconds since the epoch after which it may be taken over.
        released: the holder gave it back without finishing.
        host: the holder's host name ("" for leases written before it was recorded).
        pid: the holder's process id (0 if unknown).
        pidns: the holder's PID namespace (``/proc/self/ns/pid``), so a pid is only ever
            looked up in the namespace it belongs to.
        boot: the holder machine's boot id: two machines with one host name (and the
            root PID namespace's well-known id) still differ here.
    """

    try_number: int
    worker_id: str
    expires_at: float
    released: bool
    host: str = ""
    pid: int = 0
    pidns: str = ""
    boot: str = ""

    def live(self, now: float) -> bool:
        """Whether the lease still blocks other workers.

        A lease expires at ``expires_at``; one whose holder ran on this host in this PID
        namespace and is gone is stale at once, so resuming after a crash on the same
        machine does not wait a TTL. Any doubt (another host, another namespace, an
        unreadable lease) keeps the lease until it expires.
        """
        if self.released or now >= self.expires_at:
            return False
        return not self.holder_gone()

    def holder_gone(self) -> bool:
        """Whether the holder provably no longer exists (same host and PID namespace)."""
        here = (socket.gethostname(), _pidns(), _boot_id())
        if not self.pid or not all(here) or (self.host, self.pidns, self.boot) != here:
            return False
        if self.pid == os.getpid():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:  # exists, owned by someone else
            return False
        return False


def _boot_id() -> str:
    """This machine's boot id (Linux), or "" where it cannot be read."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _pidns() -> str:
    """This process's PID namespace id, or "" where /proc does not say."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _lease_path(key_dir: Path, n: int) -> Path:
    return key_dir / f"try-{n:04d}.lease"


def _tries(key_dir: Path) -> list[int]:
    try:
        names = os.listdir(key_dir)
    except FileNotFoundError:
        return []
    return sorted(int(m.group(1)) for m in map(_TRY_RE.match, names) if m)


def _read_lease(key_dir: Path, n: int) -> LeaseInfo:
    path = _lease_path(key_dir, n)
    released = path.with_suffix(".released").exists()
    try:
        data = json.loads(path.read_text())
        return LeaseInfo(
            n,
            str(data["worker_id"]),
            float(data["expires_at"]),
            released,
            host=str(data.get("host", "")),
            pid=int(data.get("pid", 0)),
            pidns=str(data.get("pidns", "")),
            boot=str(data.get("boot", "")),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        # A lease caught between O_EXCL creation and its first write is empty: treat it as
        # freshly live from its mtime, so a reader never steals a claim being born.
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            mtime = 0.0
        return LeaseInfo(n, "?", mtime + _BIRTH_GRACE_S, released)


_BIRTH_GRACE_S = 30.0


def read_leases(root: Path, run_id: str, key: str) -> list[LeaseInfo]:
    """Every try of one attempt key, oldest first (for audits and tests)."""
    key_dir = claims_dir(root, run_id) / _encode(key)
    return [_read_lease(key_dir, n) for n in _tries(key_dir)]


def _done_name(tag: str) -> str:
    return "done." + _encode(tag)


def key_state(root: Path, run_id: str, key: str, tag: str = "", now: float | None = None) -> str:
    """``"done"``, ``"held"`` (a live lease), ``"free"`` (never claimed, expired or released)."""
    key_dir = claims_dir(root, run_id) / _encode(key)
    if (key_dir / _done_name(tag)).exists():
        return "done"
    tries = _tries(key_dir)
    if tries and _read_lease(key_dir, tries[-1]).live(time.time() if now is None else now):
        return "held"
    return "free"


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "w") as fh:
            json.dump(data, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


class Claim:
    """A held lease on one attempt key; a context manager that heartbeats until released.

    Leaving the ``with`` block normally marks the tag done; leaving it with an exception
    gives the lease back without the mark, so another worker may retry it at once.
    """

    def __init__(
        self, key_dir: Path, key: str, tag: str, try_number: int, worker_id: str, ttl_s: float
    ):
        self.key = key
        self.tag = tag
        self.try_number = try_number
        self.worker_id = worker_id
        self.ttl_s = ttl_s
        self.path = _lease_path(key_dir, try_number)
        self._key_dir = key_dir
        self._stop = threading.Event()
        self.lost = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False

    def _payload(self) -> dict[str, Any]:
        now = time.time()
        return {
            "worker_id": self.worker_id,
            "try": self.try_number,
            "expires_at": now + self.ttl_s,
            "heartbeat_at": now,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "pidns": _pidns(),
            "boot": _boot_id(),
        }

    def heartbeat(self) -> bool:
        """Extend the lease by one TTL; False (and :attr:`lost` set) if a later try exists."""
        if any(n > self.try_number for n in _tries(self._key_dir)):
            self.lost.set()
            return False
        _write_json_atomic(self.path, self._payload())
        return True

    def start(self) -> Claim:
        """Start the heartbeat thread (every TTL/3), so a live holder never expires."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._beat, name=f"lease:{self.key}", daemon=True
            )
            self._thread.start()
        return self

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            with contextlib.suppress(OSError):  # a flaky NFS write is retried next beat
                if not self.heartbeat():
                    return

    def _stop_beating(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def release(self, *, done: bool = True) -> None:
        """Stop heartbeats and give the lease back; ``done`` also marks the tag finished.

        The done marker is written before the lease is released, and claimers re-check
        it after winning their O_EXCL, so a finished generation is never claimed again.
        """
        if self._closed:
            return
        self._closed = True
        self._stop_beating()
        # Best effort: on a full or failing disk the markers may not be written; the
        # lease then ends when it expires (at once for a holder gone from this host),
        # and a claimer re-reads the plan, so a finished attempt is still never re-run.
        with contextlib.suppress(OSError):
            if done:
                _write_json_atomic(
                    self._key_dir / _done_name(self.tag),
                    {"worker_id": self.worker_id, "try": self.try_number, "at": time.time()},
                )
            _write_json_atomic(self.path.with_suffix(".released"), {"at": time.time()})

    def __enter__(self) -> Claim:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release(done=exc_type is None)


def _try_create(key_dir: Path, n: int, payload: dict[str, Any]) -> bool:
    """Create lease ``n`` with its content, or return False if it exists.

    Written to a temporary and linked into place: ``link`` fails when the name exists
    (the ``O_EXCL`` race, NFS included), and a reader never meets the lease empty, so a
    refused command always names the holder's pid and host.
    """
    tmp = key_dir / f".tmp-{secrets.token_hex(6)}"
    with open(tmp, "x") as fh:
        json.dump(payload, fh)
        fh.flush()
        os.fsync(fh.fileno())
    try:
        os.link(tmp, _lease_path(key_dir, n))
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    return True


def _claim_key(
    run_dir: Path, key: str, tag: str, worker_id: str, ttl_s: float, max_tries: int | None
) -> Claim | None:
    key_dir = run_dir / _encode(key)
    done = key_dir / _done_name(tag)
    if done.exists():
        return None
    tries = _tries(key_dir)
    if tries and _read_lease(key_dir, tries[-1]).live(time.time()):
        return None
    n = (tries[-1] if tries else 0) + 1
    if max_tries is not None and n > max_tries:
        return None
    key_dir.mkdir(parents=True, exist_ok=True)
    claim = Claim(key_dir, key, tag, n, worker_id, ttl_s)
    if not _try_create(key_dir, n, claim._payload()):
        return None
    if done.exists():  # finished between our first look and our O_EXCL
        claim._closed = True
        _write_json_atomic(claim.path.with_suffix(".released"), {"at": time.time()})
        return None
    return claim


def claim_next(
    root: Path,
    run_id: str,
    keys: Iterable[str],
    worker_id: str,
    ttl_s: float = 60.0,
    *,
    tags: Mapping[str, str] | None = None,
    max_tries: int | None = None,
) -> Claim | None:
    """Claim the first free key, in the caller's order; None when every key is held or done.

    Args:
        root: the ledger directory (shared by every worker).
        run_id: the run whose attempts are claimed.
        keys: attempt keys in the order the caller prefers (e.g. longest first).
        worker_id: written into the lease, for audits.
        ttl_s: lease lifetime; heartbeats renew it every ``ttl_s / 3``.
        tags: the generation of each key (default ``""``); a key whose current tag is
            marked done is skipped.
        max_tries: if set, a key with this many leases already is skipped, so an attempt
            that keeps killing its worker cannot loop forever.

    Returns:
        A :class:`Claim` (not yet heartbeating: use it as a context manager or call
        :meth:`Claim.start`), or None.
    """
    if ttl_s <= 0:
        raise ValueError(f"ttl_s must be positive, got {ttl_s}")
    run_dir = claims_dir(root, run_id)
    tags = tags or {}
    for key in keys:
        claim = _claim_key(run_dir, key, tags.get(key, ""), worker_id, ttl_s, max_tries)
        if claim is not None:
            return claim
    return None
