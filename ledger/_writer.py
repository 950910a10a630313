"""One process's append side of a file-backed ledger.

A writer owns ``events/<writer_id>/``: it appends record batches to its live log
(holding an flock on it), seals the log into a Parquet segment when it grows or on
request, and chains each sealed unit to the previous one. Reopening with the same
writer id after a crash recovers the live log's complete batches and continues the
sequence; nothing another writer wrote is ever touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from aka_ledger._envelope import SCHEMA
from aka_ledger._errors import CorruptError, LedgerError
from aka_ledger._fs import (
    CAS,
    EVENTS,
    LIVE_RE,
    RESERVE_BYTES,
    RESERVE_NAME,
    TMP_PREFIX,
    Unit,
    chain_hash,
    fsync_dir,
    live_name,
    segment_name,
    temp_abandoned,
)
from aka_ledger._scan import RETRIES, latest_manifest, list_files
from aka_ledger._segments import SEGMENT_META_KEY, LiveLog, write_segment

# A live log is read message by message (~20 us each); single durable appends make one
# message per event, so logs are sealed after this many messages to keep reads fast.
SEAL_BATCHES = 2048


def sealed_tail(root: Path, writer_id: str) -> Unit | None:
    """The last sealed unit of ``writer_id``, from its segments and the manifest.

    Retries when a segment vanishes under a concurrent compaction (which commits its
    manifest, covering the segment, before deleting it).
    """
    for _ in range(RETRIES):
        try:
            return _sealed_tail_once(root, writer_id)
        except FileNotFoundError:
            continue
    raise LedgerError("segments kept vanishing while reading", path=root / EVENTS / writer_id)


def _sealed_tail_once(root: Path, writer_id: str) -> Unit | None:
    listing = list_files(root)
    best: Unit | None = None
    _, entries = latest_manifest(listing)
    for entry in entries:
        for unit in entry.units:
            if unit.writer == writer_id and (best is None or unit.last > best.last):
                best = unit
    for _, last, path in listing.segments.get(writer_id, []):
        if best is not None and last <= best.last:
            continue
        try:
            meta = pq.read_schema(path).metadata or {}
            units = [Unit.from_json(u) for u in json.loads(meta[SEGMENT_META_KEY])["units"]]
        except FileNotFoundError:
            raise
        except Exception:
            if not path.exists():
                raise FileNotFoundError(path) from None
            raise CorruptError(
                "segment metadata unreadable; cannot continue this writer's chain",
                path=path,
                fix="run `aka ledger verify`",
            ) from None
        best = max(units, key=lambda u: u.last)
    return best


def drop_cas_temps(root: Path, writer_id: str) -> None:
    """Remove puts left in flight by an earlier process with this writer id, and the
    ledger file's temporaries of a process killed while creating the ledger (only those
    no live process holds)."""
    for tmp in (root / CAS / "tmp").glob(f"{TMP_PREFIX}{writer_id}-*"):
        tmp.unlink(missing_ok=True)
    now = time.time()
    for tmp in root.glob(f"{TMP_PREFIX}*"):
        if tmp.is_file() and temp_abandoned(tmp, now):
            tmp.unlink(missing_ok=True)


class FileWriter:
    """Appends, syncs and seals the live log of one writer."""

    def __init__(self, root: Path, writer_id: str, *, seal_rows: int | None) -> None:
        self.root = root
        self.writer_id = writer_id
        self.dir = root / EVENTS / writer_id
        self.seal_rows = seal_rows
        self.live: LiveLog | None = None
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = 0
        self.next_seq = 0
        self.last_time_us = 0
        self.prev_chain = ""
        if self.dir.exists():
            for _ in range(RETRIES):
                try:
                    self._recover()
                    break
                except FileNotFoundError:  # a compaction sealed our orphaned log: redo
                    self._release()
                    self.next_seq, self.prev_chain, self.last_time_us = 0, "", 0

    def _release(self) -> None:
        if self.live is not None:
            self.live.close()
            self.live = None
        self.pending, self.pending_rows = [], 0

    def _recover(self) -> None:
        """Continue after a crash: reopen the live log, drop sealed ones, then drop temps.

        Temps go last: only once this writer holds its live logs' locks can no
        compaction be sealing one of them (writing a temp here) at the same time.
        """
        tail = sealed_tail(self.root, self.writer_id)
        if tail is not None:
            self.next_seq, self.prev_chain = tail.last + 1, tail.chain
        lives = sorted(p for p in self.dir.iterdir() if LIVE_RE.fullmatch(p.name))
        for path in lives:
            first = int(path.name[5:17])
            log = LiveLog(path, first, new=False)
            batches = log.recover()
            rows = sum(b.num_rows for b in batches)
            if first + max(rows, 1) - 1 < self.next_seq:
                log.close()  # already sealed before the crash
                path.unlink(missing_ok=True)
                continue
            if first != self.next_seq or self.live is not None:
                log.close()
                raise CorruptError(
                    f"live log starts at seq {first} but the writer's sealed history ends "
                    f"at {self.next_seq - 1}",
                    path=path,
                    fix="run `aka ledger verify`; use a new writer id to keep appending",
                )
            self.live = log
            self.pending = batches
            self.pending_rows = rows
            self.next_seq = first + rows
            if rows:
                times = batches[-1].column("time").cast(pa.int64())
                self.last_time_us = times[len(times) - 1].as_py()
        for tmp in self.dir.glob(f"{TMP_PREFIX}*"):
            tmp.unlink(missing_ok=True)
        drop_cas_temps(self.root, self.writer_id)
        fsync_dir(self.dir)
        if self.live is not None and self.live.format == 1:
            self.seal()  # a log from before checksummed frames: new appends start a new one

    def _ensure_live(self) -> LiveLog:
        if self.live is None:
            try:
                self.dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LedgerError(
                    f"cannot create the writer directory: {exc.strerror}",
                    path=self.dir,
                    fix="make the ledger directory writable",
                ) from None
            self._reserve()
            path = self.dir / live_name(self.next_seq)
            self.live = LiveLog(path, self.next_seq, new=True, tag=self.writer_id)
            fsync_dir(self.dir)
        return self.live

    def _reserve(self) -> None:
        """Hold :data:`RESERVE_BYTES` back for the last records on a full disk (made when
        a live log starts and there is room; :meth:`release_reserve` gives it up)."""
        path = self.dir / RESERVE_NAME
        if path.exists():
            return
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            return
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        except OSError:  # no room for it now: try again with the next live log
            path.unlink(missing_ok=True)
        finally:
            os.close(fd)

    def release_reserve(self) -> bool:
        """Free the reserve, so that a few more records fit; whether there was one."""
        path = self.dir / RESERVE_NAME
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True

    def write(self, batch: pa.RecordBatch, *, durable: bool) -> None:
        """Append a batch whose seqs start at ``next_seq``; seal if the log is big."""
        live = self._ensure_live()
        live.write(batch, durable=durable)
        self.pending.append(batch)
        self.pending_rows += batch.num_rows
        self.next_seq += batch.num_rows
        too_many_rows = self.seal_rows is not None and self.pending_rows >= self.seal_rows
        if too_many_rows or len(self.pending) >= SEAL_BATCHES:
            self.seal()

    def sync(self) -> None:
        if self.live is not None:
            self.live.sync()

    def seal(self) -> None:
        """Seal the live log into a segment, then delete the log (in that order)."""
        live = self.live
        if live is None:
            return
        if self.pending_rows:
            table = pa.Table.from_batches(self.pending, SCHEMA)
            first, last = live.first, self.next_seq - 1
            ids = table.column("event_id").to_pylist()
            unit = Unit(
                self.writer_id, first, last, self.prev_chain, chain_hash(self.prev_chain, ids)
            )
            write_segment(self.dir / segment_name(first, last), table, [unit], tag=self.writer_id)
            self.prev_chain = unit.chain
        live.path.unlink(missing_ok=True)  # before the lock goes, so no one else seals it
        live.close()
        fsync_dir(self.dir)
        self.live = None
        self.pending, self.pending_rows = [], 0

    def close(self) -> None:
        """Seal what is pending and release the live log."""
        with contextlib.suppress(FileNotFoundError):
            self.seal()
        if self.live is not None:
            self.live.close()
            self.live = None
