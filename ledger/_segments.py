"""Reading and writing the two event file kinds: live logs and sealed segments.

A live log is an Arrow IPC stream: a schema message then record-batch messages, each
written with one ``write``. A process killed mid-write leaves at most one torn message
at the end, and :func:`read_live` returns every complete batch before it. A sealed
segment is a Parquet file written temp → fsync → rename whose key-value metadata
carries its hash-chain units.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from aka_ledger._envelope import SCHEMA
from aka_ledger._errors import CorruptError, LedgerError
from aka_ledger._fs import Unit, fsync_dir, tmp_name

SEGMENT_META_KEY = b"aka.segment"
HEADER = SCHEMA.serialize().to_pybytes()


def read_live(path: Path) -> tuple[list[pa.RecordBatch], int, int]:
    """Complete batches of a live log, the byte offset where they end, and the file size.

    Raises:
        FileNotFoundError: the file vanished (sealed meanwhile); callers retry.
        CorruptError: the file is not a live log of this schema.
    """
    data = path.read_bytes()
    return parse_live(data, path)


def parse_live(data: bytes, path: Path) -> tuple[list[pa.RecordBatch], int, int]:
    """:func:`read_live` over bytes already read."""
    if len(data) < len(HEADER):
        if HEADER.startswith(data):
            return [], 0, len(data)
        raise CorruptError("not a live log (bad header)", path=path)
    if not data.startswith(HEADER):
        raise CorruptError(
            "not a live log of this schema (bad header)",
            path=path,
            fix="move the file out of the ledger directory",
        )
    reader = pa.BufferReader(data)
    reader.seek(len(HEADER))
    batches: list[pa.RecordBatch] = []
    end = len(HEADER)
    while end < len(data):
        try:
            msg = pa.ipc.read_message(reader)
            batch = pa.ipc.read_record_batch(msg, SCHEMA)
        except (OSError, pa.ArrowInvalid, EOFError):
            break  # torn tail: everything before it is complete
        batches.append(batch)
        end = reader.tell()
    return batches, end, len(data)


class LiveLog:
    """The append side of one live log, owned by one writer (which holds its flock)."""

    def __init__(self, path: Path, first: int, *, new: bool, tag: str = "live") -> None:
        self.path = path
        self.first = first
        self.fd = self._create(path, tag) if new else self._reopen(path)
        self.size = os.fstat(self.fd).st_size

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
        """Read complete batches and cut off a torn tail (we hold the lock)."""
        data = os.pread(self.fd, self.size, 0)
        batches, end, size = parse_live(data, self.path)
        if end < len(HEADER):
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, HEADER, 0)
            end = len(HEADER)
        elif end < size:
            os.ftruncate(self.fd, end)
        os.fsync(self.fd)
        self.size = end
        return batches

    def write(self, batch: pa.RecordBatch, *, durable: bool) -> None:
        """Append one batch with a single write; fsync if ``durable``."""
        buf = batch.serialize()
        n = os.pwrite(self.fd, buf, self.size)
        if n != buf.size:  # a short write on a full disk; never leave it half written
            os.ftruncate(self.fd, self.size)
            raise LedgerError("short write (disk full?)", path=self.path)
        self.size += n
        if durable:
            os.fsync(self.fd)

    def sync(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing releases the flock
            self.fd = -1


def write_segment(path: Path, table: pa.Table, units: list[Unit], *, tag: str) -> None:
    """Write a Parquet segment durably: temp → fsync → rename → fsync directory."""
    meta = {SEGMENT_META_KEY: json.dumps({"units": [u.to_json() for u in units]}).encode()}
    table = table.replace_schema_metadata(meta)
    tmp = path.parent / tmp_name(tag)
    try:
        pq.write_table(table, tmp, compression="zstd", row_group_size=1 << 20)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise LedgerError(f"cannot write: {exc.strerror or exc}", path=path) from None
    fsync_dir(path.parent)


def read_segment(path: Path) -> tuple[pa.Table, list[Unit]]:
    """A segment's rows and hash-chain units.

    Raises:
        FileNotFoundError: it vanished (compacted meanwhile); callers retry.
        CorruptError: it does not parse, has another schema, or lacks its units.
    """
    try:
        table = pq.read_table(path)
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
        units = [Unit.from_json(u) for u in json.loads(meta[SEGMENT_META_KEY])["units"]]
    except (KeyError, ValueError, TypeError):
        raise CorruptError("segment lacks its hash-chain metadata", path=path) from None
    return table, units
