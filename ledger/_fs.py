"""File layout of a ledger directory, and the durable-write primitives under it.

::

    <root>/ledger.json                               format version of the directory
    <root>/cas/<hex[:2]>/<hex[2:]>                   blobs
    <root>/cas/tmp/.tmp-<writer>-<random>            puts in flight
    <root>/events/<writer>/live-<first>.arrows       a writer's live log (Arrow IPC stream)
    <root>/events/<writer>/<first>-<last>.parquet    a sealed segment
    <root>/events/_compacted/<n>-<token>-<i>.parquet segments written by compaction n
    <root>/events/_manifests/<n>.json                compaction manifest n
    <root>/quarantine/<writer>/live-<first>.arrows   undecodable live-log bytes, kept for people

Sequence numbers in names are zero-padded to 12 digits so names sort in order.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aka_ledger._errors import LedgerError, SchemaError

FORMAT = 1
META_FILE = "ledger.json"
EVENTS = "events"
CAS = "cas"
SIDECAR = "sidecar"
"""Reserved for applications' own files beside the ledger (leases, job logs): never read
as events and not checked by ``verify``."""
QUARANTINE = "quarantine"
"""Where compaction moves live logs it could not fully decode instead of deleting them;
``verify`` reports every file in it until a person has looked and removed it."""
COMPACTED = "_compacted"
MANIFESTS = "_manifests"
WRITER_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
LIVE_RE = re.compile(r"live-(\d{12})\.arrows")
SEGMENT_RE = re.compile(r"(\d{12})-(\d{12})\.parquet")
COMPACTED_RE = re.compile(r"(\d{8})-([0-9a-f]{12})-(\d{4})\.parquet")
MANIFEST_RE = re.compile(r"(\d{8})\.json")
TMP_PREFIX = ".tmp-"
RESERVE_NAME = "reserve.bin"
"""In each writer's directory: space held back for the writer's last records on a full
disk (:meth:`aka_ledger.Ledger.release_reserve`)."""
RESERVE_BYTES = 1 << 20


def default_writer_id() -> str:
    """Unique per process: host, pid and randomness (pids repeat across nodes and time)."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:40] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


def check_writer_id(writer_id: str) -> str:
    """Writer ids become directory names, so they are restricted to a safe alphabet."""
    if not WRITER_RE.fullmatch(writer_id):
        raise LedgerError(
            f"invalid writer id {writer_id!r}",
            fix="use letters, digits, '.', '_' and '-' (at most 128, not starting with '_')",
        )
    return writer_id


def live_name(first: int) -> str:
    return f"live-{first:012d}.arrows"


def segment_name(first: int, last: int) -> str:
    return f"{first:012d}-{last:012d}.parquet"


def tmp_name(tag: str) -> str:
    return f"{TMP_PREFIX}{tag}-{secrets.token_hex(6)}"


def fsync_dir(path: Path) -> None:
    """Make a rename or unlink in ``path`` durable (a no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def open_temp(tmp: Path) -> int:
    """Create a temp file and hold its ``flock`` until the caller closes the descriptor.

    A temp whose lock can be taken belongs to no live process: compaction deletes it
    and ``verify`` reports it as left over, while a temp being written is left alone.
    """
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file: no one else can hold it
    return fd


CAS_TEMP_STALE_S = 3600.0
"""A content-store put holds no lock: its temp counts as abandoned once this old."""

TEMP_GRACE_S = 5.0
"""An unlocked temp younger than this may be one created a moment ago whose lock is not
yet taken; it is left alone."""


def temp_abandoned(path: Path, now: float) -> bool:
    """Whether a temp file belongs to no live process (its lock is free and it is not new)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        if now - os.fstat(fd).st_mtime < TEMP_GRACE_S:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return False  # its writer holds it
        return True
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, *, tag: str, exclusive: bool = False) -> bool:
    """Write ``data`` to ``path`` via temp → fsync → rename (or → link when exclusive).

    With ``exclusive`` the final name is created by ``link``, which fails if the name
    exists: the O_EXCL commit that also works on NFS, and readers never see a partial
    file. Returns False if an exclusive commit lost the race.
    """
    tmp = path.parent / tmp_name(tag)
    try:
        with open(open_temp(tmp), "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if exclusive:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            finally:
                tmp.unlink(missing_ok=True)
        else:
            os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise LedgerError(f"cannot write: {exc.strerror or exc}", path=path) from None
    fsync_dir(path.parent)
    return True


def ensure_root(root: Path, *, create: bool) -> None:
    """Check (or create) a ledger directory and its format version.

    Raises:
        LedgerError: the directory is missing (and ``create`` is False) or unwritable.
        SchemaError: it was written by a newer aka (a higher format version).
    """
    meta = root / META_FILE
    if not meta.exists():
        if not create:
            raise LedgerError(
                "no ledger here", path=root, fix="pass --ledger DIR pointing at a ledger"
            )
        try:
            (root / EVENTS).mkdir(parents=True, exist_ok=True)
            (root / CAS).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(
                f"cannot create the ledger: {exc.strerror}",
                path=root,
                fix="choose a writable directory",
            ) from None
        write_atomic(meta, json.dumps({"format": FORMAT}).encode(), tag="meta", exclusive=True)
    doc = read_json(meta)
    found = doc.get("format")
    if not isinstance(found, int):
        raise LedgerError("no 'format' field", path=meta, fix="restore ledger.json")
    if found > FORMAT:
        raise SchemaError(
            f"ledger format {found} was written by a newer aka (this code reads {FORMAT})",
            path=meta,
            fix="upgrade aka to read this ledger",
        )


def read_json(path: Path) -> dict[str, Any]:
    """Parse a small JSON file, raising :class:`LedgerError` naming it."""
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        raise LedgerError(f"unreadable JSON: {exc}", path=path) from None
    if not isinstance(doc, dict):
        raise LedgerError("expected a JSON object", path=path)
    return doc


@dataclass(frozen=True, slots=True)
class Unit:
    """One sealing unit of a writer: a contiguous sequence range and its chain link.

    ``chain`` is BLAKE3 over ``prev`` and the unit's event ids in sequence order, so
    each writer's sealed history is a hash chain: removing, reordering or altering a
    sealed event breaks it.
    """

    writer: str
    first: int
    last: int
    prev: str
    chain: str

    def to_json(self) -> list[Any]:
        return [self.writer, self.first, self.last, self.prev, self.chain]

    @classmethod
    def from_json(cls, row: Any) -> Unit:
        w, f, la, p, c = row
        return cls(str(w), int(f), int(la), str(p), str(c))


def chain_hash(prev: str, event_ids: list[str]) -> str:
    """The chain value of a unit whose events (in sequence order) have ``event_ids``."""
    from blake3 import blake3

    h = blake3(prev.encode() + b"\n")
    h.update("\n".join(event_ids).encode())
    return h.hexdigest()
