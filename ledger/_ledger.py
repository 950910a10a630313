"""The :class:`Ledger`: one object over an event log and a content store.

Two backends share this class and its contract: a directory (:meth:`Ledger.open`,
many processes on many nodes at once) and memory (:meth:`Ledger.memory`, the test
double). Encoding, deduplication, ordering and decoding live here, once; a backend
only stores record batches and returns them as a table.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from aka_ledger._authority import Authority, Rejected, check
from aka_ledger._cas import ContentStore, FileContentStore, MemoryContentStore
from aka_ledger._decode import decode
from aka_ledger._envelope import SCHEMA, Envelope, encode, no_gc, now_us
from aka_ledger._errors import LedgerError
from aka_ledger._fs import CAS, check_writer_id, default_writer_id, ensure_root
from aka_ledger._marks import Mark, marks_of
from aka_ledger._model import EventModel, EventRegistry
from aka_ledger._scan import dedup_sort, read_all
from aka_ledger._writer import FileWriter, drop_cas_temps

if TYPE_CHECKING:
    import duckdb

    from aka_ledger._compact import CompactionResult

DEFAULT_SEAL_ROWS = 250_000


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing ``verify`` found wrong: the file (or digest) and what is wrong."""

    path: str
    message: str


class _Store(Protocol):
    @property
    def next_seq(self) -> int: ...

    last_time_us: int

    def write(self, batch: pa.RecordBatch, *, durable: bool) -> None: ...
    def read(self) -> tuple[pa.Table, list[str]]: ...
    def sync(self) -> None: ...
    def seal(self) -> None: ...
    def close(self) -> None: ...
    def release_reserve(self) -> bool: ...


class _MemoryStore:
    """Record batches in a list."""

    def __init__(self) -> None:
        self.batches: list[pa.RecordBatch] = []
        self.next_seq = 0
        self.last_time_us = 0

    def write(self, batch: pa.RecordBatch, *, durable: bool) -> None:
        self.batches.append(batch)
        self.next_seq += batch.num_rows

    def read(self) -> tuple[pa.Table, list[str]]:
        table = pa.Table.from_batches(self.batches, SCHEMA)
        src = pa.array([0] * table.num_rows, pa.int32())
        return dedup_sort([table.append_column("_src", src)]), ["<memory>"]

    def sync(self) -> None:
        pass

    def seal(self) -> None:
        pass

    def close(self) -> None:
        pass

    def release_reserve(self) -> bool:
        return False


class _FileStore:
    """A directory: this process's writer plus reads of every writer's files."""

    def __init__(self, root: Path, writer_id: str, seal_rows: int | None) -> None:
        self.root = root
        self.writer_id = writer_id
        self.seal_rows = seal_rows
        self._writer: FileWriter | None = None
        if (root / "events" / writer_id).exists():
            self._writer = FileWriter(root, writer_id, seal_rows=seal_rows)
        else:  # a writer killed before its first append may still have left a put behind
            drop_cas_temps(root, writer_id)

    @property
    def writer(self) -> FileWriter:
        if self._writer is None:
            self._writer = FileWriter(self.root, self.writer_id, seal_rows=self.seal_rows)
        return self._writer

    @property
    def next_seq(self) -> int:
        return self.writer.next_seq

    @property
    def last_time_us(self) -> int:
        return self._writer.last_time_us if self._writer else 0

    @last_time_us.setter
    def last_time_us(self, value: int) -> None:
        self.writer.last_time_us = value

    def write(self, batch: pa.RecordBatch, *, durable: bool) -> None:
        self.writer.write(batch, durable=durable)

    def read(self) -> tuple[pa.Table, list[str]]:
        return read_all(self.root)

    def sync(self) -> None:
        if self._writer:
            self._writer.sync()

    def seal(self) -> None:
        if self._writer:
            self._writer.seal()

    def close(self) -> None:
        if self._writer:
            self._writer.close()
            self._writer = None

    def release_reserve(self) -> bool:
        return self._writer.release_reserve() if self._writer else False


class Ledger:
    """Append events, read them back deduplicated and ordered, and store blobs."""

    def __init__(
        self,
        store: _Store,
        cas: ContentStore,
        registry: EventRegistry,
        writer_id: str,
        root: Path | None,
        authority: Authority | None = None,
    ) -> None:
        self._store = store
        self.cas = cas
        self.registry = registry
        self.writer_id = writer_id
        self.root = root
        self.authority = authority
        self.rejected: list[Rejected] = []
        """Events the last read dropped for failing authority (see :class:`Authority`)."""
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def open(
        cls,
        root: str | Path,
        *,
        registry: EventRegistry,
        writer_id: str | None = None,
        create: bool = True,
        seal_rows: int | None = DEFAULT_SEAL_ROWS,
        authority: Authority | None = None,
    ) -> Ledger:
        """Open (or create) a ledger directory.

        Args:
            root: the ledger directory.
            registry: event types this process reads and writes.
            writer_id: this process's writer id; the default is unique per process.
                Pass the id of a crashed writer to recover its live log and continue.
            create: create the directory if it does not exist.
            seal_rows: seal the live log into a segment once it holds this many rows.
            authority: event types only run-key holders may write; reads drop those
                that fail, and a signing authority MACs what this process appends.

        Raises:
            LedgerError: missing (with ``create=False``) or unwritable directory, or the
                writer id is held by another live process.
            SchemaError: the directory was written by a newer aka.
        """
        path = Path(root)
        ensure_root(path, create=create)
        wid = check_writer_id(writer_id) if writer_id is not None else default_writer_id()
        store = _FileStore(path, wid, seal_rows)
        cas = FileContentStore(path / CAS, tmp_tag=wid)
        return cls(store, cas, registry, wid, path, authority)

    @classmethod
    def memory(
        cls,
        *,
        registry: EventRegistry,
        writer_id: str | None = None,
        authority: Authority | None = None,
    ) -> Ledger:
        """An in-memory ledger with the same contract (tests, dry runs)."""
        wid = check_writer_id(writer_id) if writer_id is not None else default_writer_id()
        return cls(_MemoryStore(), MemoryContentStore(), registry, wid, None, authority)

    # -- writing ------------------------------------------------------------------------
    def append(
        self,
        event: EventModel,
        *,
        run_id: str,
        attempt_key: str | None = None,
        durable: bool = False,
    ) -> Envelope:
        """Append one event; it is on stable storage when this returns if its type is
        durable (:attr:`EventModel.durable`) or ``durable`` forces it."""
        return self.append_many([(event, run_id, attempt_key)], durable=durable)[0]

    def append_many(
        self, items: Sequence[tuple[EventModel, str, str | None]], durable: bool = False
    ) -> list[Envelope]:
        """Append events as one record batch (the fast path); all or nothing.

        The batch is synced when any of its event types is durable, or when ``durable``
        forces it; ``durable`` never weakens what a type declares.
        """
        if not items:
            return []
        durable = durable or any(type(it[0]).durable for it in items)
        self._check_open()
        known = self.registry.types()
        for model in {type(it[0]) for it in items}:
            if model.model_fields["type"].default not in known:
                raise LedgerError(
                    f"event type {model.__name__!r} is not registered",
                    fix="register it in the registry passed to Ledger.open",
                )
        macs = None
        if self.authority is not None and self.authority.sign:
            macs = [self.authority.signing_key(e.type, run) for e, run, _ in items]
        with self._lock:
            store = self._store
            t = max(now_us(), store.last_time_us)
            with no_gc():
                batch, envs = encode(
                    items,
                    writer_id=self.writer_id,
                    first_seq=store.next_seq,
                    time_us=t,
                    macs=macs,
                )
            store.write(batch, durable=durable)
            store.last_time_us = t
        return envs

    def sync(self) -> None:
        """Make every appended event durable (fsync the live log)."""
        with self._lock:
            self._store.sync()

    def seal(self) -> None:
        """Seal the live log into a Parquet segment now."""
        with self._lock:
            self._store.seal()

    def release_reserve(self) -> bool:
        """Give up the space this writer holds back, so a few more records fit on a full
        disk; returns whether there was any.

        A directory ledger's writer keeps 1 MiB allocated beside its live log (made when
        a live log starts and there is room). When an append fails because the disk is
        full, the caller can release it and append the record that says so, e.g. that
        its work stopped there, instead of leaving no trace of the stop. The memory
        backend has no reserve.
        """
        with self._lock:
            return self._store.release_reserve()

    def close(self) -> None:
        """Seal and release this writer's files; the object is unusable afterwards."""
        with self._lock:
            if not self._closed:
                self._store.close()
                self._closed = True

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise LedgerError("the ledger is closed", path=self.root)

    # -- reading ------------------------------------------------------------------------
    def table(
        self, *, run_id: str | None = None, types: Collection[str] | None = None
    ) -> tuple[pa.Table, list[str]]:
        """Deduplicated, ordered rows (Arrow) with a ``_src`` column into the file list.

        Events that fail the ledger's :class:`Authority` are dropped here, for every read
        path (events, iteration, SQL), and kept in :attr:`rejected`.
        """
        table, names = self._store.read()
        if self.authority is not None:
            table, self.rejected = check(table, self.authority, names)
            if self.rejected and self.authority.on_reject is not None:
                self.authority.on_reject(self.rejected)
        if run_id is not None:
            table = table.filter(pc.equal(table.column("run_id"), run_id))
        if types is not None:
            table = table.filter(pc.is_in(table.column("type"), pa.array(list(types), pa.string())))
        return table, names

    def events(
        self, *, run_id: str | None = None, types: Collection[str] | None = None
    ) -> list[Envelope]:
        """Every event (of one run, of some types), deduplicated, in (time, writer, seq) order.

        Raises:
            SchemaError: a stored event's type is unknown or its version too new; the
                message names the file.
        """
        table, names = self.table(run_id=run_id, types=types)
        with no_gc():
            return decode(table, self.registry, names)

    def iter_events(
        self,
        *,
        run_id: str | None = None,
        types: Collection[str] | None = None,
        batch: int = 8_192,
    ) -> Iterator[Envelope]:
        """The events of :meth:`events`, in the same order, decoded ``batch`` rows at a time.

        For folding a large history: only one batch of envelopes is alive at a time, so
        memory stays flat and the cyclic collector never has millions of young objects
        to scan. A bad row raises :class:`SchemaError` when its batch is reached (after
        the events before it were yielded), with the same message :meth:`events` gives.
        """
        if batch < 1:
            raise ValueError("batch must be at least 1")
        table, names = self.table(run_id=run_id, types=types)
        for start in range(0, table.num_rows, batch):
            with no_gc():
                envelopes = decode(table.slice(start, batch), self.registry, names)
            yield from envelopes

    def run_ids(self) -> list[str]:
        """Distinct run ids, sorted."""
        table, _ = self._store.read()
        return sorted(pc.unique(table.column("run_id")).to_pylist())

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with an ``events`` view over every event (a snapshot)."""
        from aka_ledger._sql import connect

        return connect(self)

    # -- maintenance --------------------------------------------------------------------
    def verify(
        self, *, deep: bool = False, marks: Iterable[tuple[str, Mark]] = ()
    ) -> list[Problem]:
        """Check everything recorded; an empty list means the ledger is sound.

        Args:
            deep: also check blobs reachable through referenced blobs (a tree's files).
            marks: high-water marks the application recorded (from :meth:`marks`), each
                with where it was recorded: a writer that no longer reaches one is
                reported, as for the marks every compaction manifest carries.
        """
        from aka_ledger._verify import verify

        return verify(self, deep=deep, marks=marks)

    def marks(self) -> dict[str, Mark]:
        """Each writer's high-water mark (last seq, head over its ids) as read now.

        Record them where a later loss must show (in an event of your own) and pass
        them back to :meth:`verify`. A writer holding an event that fails the ledger's
        :class:`Authority` gets no mark: removing a forgery is not a loss.
        """
        table, _ = self.table()
        forgers = {r.writer_id for r in self.rejected}
        return {w: m for w, m in marks_of([table]).items() if w not in forgers}

    def compact(self, *, target_rows: int | None = None) -> CompactionResult:
        """Merge small segments (and seal dead writers' live logs); safe while others run."""
        from aka_ledger._compact import CompactionResult, compact

        if self.root is None:
            return CompactionResult()
        return compact(self.root, target_rows=target_rows, own_writer=self.writer_id)
