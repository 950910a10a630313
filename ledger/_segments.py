"""Reading and writing the two event file kinds: live logs and sealed segments.

A live log is a schema message then one checksummed frame per record batch
(:mod:`aka_ledger._frames`), each written with one ``pwritev``. A process killed
mid-write leaves at most one torn frame at the end, and :func:`read_live` returns every
complete batch before it, while damage anywhere is reported rather than taken for a
torn tail. A sealed segment is a Parquet file written temp → fsync → rename whose
key-value metadata carries its hash-chain units; its pages carry CRC checksums.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from blake3 import blake3

from aka_ledger._envelope import SCHEMA
from aka_ledger._errors import CorruptError, LedgerError
from aka_ledger._frames import HEADER, LiveScan, frame_head, scan_live
from aka_ledger._fs import Unit, fsync_dir, open_temp, tmp_name

SEGMENT_META_KEY = b"aka.segment"


def read_live(path: Path) -> LiveScan:
    """What a live log holds: intact records, a torn tail, damage (:func:`scan_live`).

    Raises:
        FileNotFoundError: the file vanished (sealed meanwhile); callers retry.
        CorruptError: the file is not a live log of this schema.
    """
    return scan_live(path.read_bytes(), path)


class LiveLog:
    """The append side of one live log, owned by one writer (which holds its flock)."""

    def __init__(self, path: Path, first: int, *, new: bool, tag: str = "live") -> None:
        self.path = path
        self.first = first
        self.fd = self._create(path, tag) if new else self._reopen(path)
        self.size = os.fstat(self.fd).st_size
        self.format = 2

    @staticmethod
    def _create(path: Path, tag: str) -> int:
        """Create the log already locked and with its header, then give it its name.

        A compaction takes any live log whose lock it can get for a dead writer's, so
        the log must never be visible unlocked: it is made under a temp name, locked,
        and hard-linked to its name (which fails if the name exists).
        """
        tmp = path.parent / tmp_name(tag)
        try:
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as exc:
            raise LedgerError(f"cannot write: {exc.strerror}", path=path) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(fd, HEADER)
            os.link(tmp, path)
        except FileExistsError:
            os.close(fd)
            raise LedgerError(
                "live log already exists (writer id in use)",
                path=path,
                fix="give each process its own writer_id (the default is unique)",
            ) from None
        except OSError as exc:
            os.close(fd)
            raise LedgerError(f"cannot write: {exc.strerror}", path=path) from None
        finally:
            tmp.unlink(missing_ok=True)
        return fd

    @staticmethod
    def _reopen(path: Path) -> int:
        """Open an existing log and take its lock (after a crash of its writer).

        A compaction may be sealing the orphaned log for a moment; a live writer holds
        its lock for good, so wait briefly, then refuse. If the log was sealed and
        unlinked meanwhile, raise FileNotFoundError so the caller starts over.
        """
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise LedgerError(f"cannot write: {exc.strerror}", path=path) from None
        deadline = time.monotonic() + 2.0
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
            os.close(fd)
            raise LedgerError(
                "live log is locked by another process (writer id in use)",
                path=path,
                fix="give each process its own writer_id (the default is unique)",
            ) from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            raise FileNotFoundError(path)
        return fd

    def recover(self) -> list[pa.RecordBatch]:
        """Read complete batches and cut off a torn tail (we hold the lock).

        Only a torn tail is ever cut: a log with damaged bytes is refused, so no
        undecodable byte is deleted here (``aka ledger compact`` quarantines it).

        Raises:
            CorruptError: the log holds damage (named with its offset).
        """
        data = os.pread(self.fd, self.size, 0)
        scan = scan_live(data, self.path)
        if scan.damaged:
            first = scan.damage[0]
            raise CorruptError(
                f"live log damaged at byte {first.offset} ({first.reason}); "
                f"{scan.beyond} intact record(s) follow the damage",
                path=self.path,
                fix="run `aka ledger compact` to seal what is intact and quarantine the "
                "rest, then `aka ledger verify`; use a new writer id to keep appending",
            )
        self.format = scan.format
        if scan.end < len(HEADER) and scan.format == 2:
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, HEADER, 0)
            scan.end = len(HEADER)
        elif scan.end < scan.size:
            os.ftruncate(self.fd, scan.end)
        os.fsync(self.fd)
        self.size = scan.end
        return scan.batches

    def write(self, batch: pa.RecordBatch, *, durable: bool) -> None:
        """Append one batch as one checksummed frame in a single write; fsync if ``durable``."""
        body = batch.serialize()
        head = frame_head(body.size, body)
        total = len(head) + body.size
        try:
            n = os.pwritev(self.fd, [head, body], self.size)
        except OSError as exc:
            os.ftruncate(self.fd, self.size)
            raise LedgerError(
                f"cannot append: {exc.strerror or exc}",
                path=self.path,
                fix="free space on the ledger's file system (nothing was recorded)",
            ) from None
        if n != total:  # a short write on a full disk; never leave it half written
            os.ftruncate(self.fd, self.size)
            raise LedgerError(
                "short write (disk full?)",
                path=self.path,
                fix="free space on the ledger's file system (nothing was recorded)",
            )
        self.size += n
        if durable:
            os.fsync(self.fd)

    def sync(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing releases the flock
            self.fd = -1


def write_segment(path: Path, table: pa.Table, units: list[Unit], *, tag: str) -> str:
    """Write a Parquet segment durably: temp → fsync → rename → fsync directory.

    The temp is held under ``flock`` while written (:func:`open_temp`), so a kill leaves
    a temp any later compaction can tell from one in flight. Returns the BLAKE3 digest
    of the file's bytes (compaction records it in its manifest).
    """
    meta = {SEGMENT_META_KEY: json.dumps({"units": [u.to_json() for u in units]}).encode()}
    table = table.replace_schema_metadata(meta)
    tmp = path.parent / tmp_name(tag)
    try:
        fd = open_temp(tmp)
        try:
            pq.write_table(
                table, tmp, compression="zstd", row_group_size=1 << 20, write_page_checksum=True
            )
            os.fsync(fd)
            digest = file_digest(fd)
            os.replace(tmp, path)
        finally:
            os.close(fd)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise LedgerError(f"cannot write: {exc.strerror or exc}", path=path) from None
    fsync_dir(path.parent)
    return digest


def file_digest(fd: int) -> str:
    """BLAKE3 hex of a whole file, read through ``fd`` from the start."""
    h = blake3()
    pos = 0
    while chunk := os.pread(fd, 1 << 20, pos):
        h.update(chunk)
        pos += len(chunk)
    return h.hexdigest()


def read_segment(path: Path) -> tuple[pa.Table, list[Unit]]:
    """A segment's rows and hash-chain units.

    Raises:
        FileNotFoundError: it vanished (compacted meanwhile); callers retry.
        CorruptError: it does not parse, has another schema, or lacks its units.
    """
    try:
        table = pq.read_table(path, page_checksum_verification=True)
    except FileNotFoundError:
        raise
    except (OSError, pa.ArrowException) as exc:
        if not path.exists():
            raise FileNotFoundError(path) from None
        raise CorruptError(
            f"segment does not parse ({exc})",
            path=path,
            fix="restore it from a backup or a replica; `aka ledger verify` lists the damage",
        ) from None
    meta = table.schema.metadata or {}
    table = table.replace_schema_metadata(None)
    if table.schema != SCHEMA:
        raise CorruptError("segment has an unexpected schema", path=path)
    try:
        table.validate(full=True)  # offsets and UTF-8: Arrow trusts them when reading values
    except pa.ArrowException as exc:
        raise CorruptError(
            f"segment holds invalid data ({exc})",
            path=path,
            fix="restore it from a backup or a replica; `aka ledger verify` lists the damage",
        ) from None
    try:
        units = [Unit.from_json(u) for u in json.loads(meta[SEGMENT_META_KEY])["units"]]
    except (KeyError, ValueError, TypeError):
        raise CorruptError("segment lacks its hash-chain metadata", path=path) from None
    return table, units
