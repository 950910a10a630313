"""Reading a ledger directory as one deduplicated table, safe against concurrent writers.

A read lists the event files, then reads the latest compaction manifest, then reads
the files. Whatever a writer or a compaction does meanwhile, the outcome is either a
complete view (duplicates are removed by ``event_id``) or a vanished file, in which
case the whole read is retried: writers and compactions only ever delete a file after
its events are durably somewhere else.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from blake3 import blake3

from aka_ledger._envelope import SCHEMA
from aka_ledger._errors import CorruptError, LedgerError
from aka_ledger._fs import (
    COMPACTED,
    COMPACTED_RE,
    EVENTS,
    LIVE_RE,
    MANIFEST_RE,
    MANIFESTS,
    RESERVE_NAME,
    SEGMENT_RE,
    TMP_PREFIX,
    WRITER_RE,
    Unit,
    read_json,
)
from aka_ledger._segments import read_live, read_segment

RETRIES = 20
SORT_KEYS = [("time", "ascending"), ("writer_id", "ascending"), ("seq", "ascending")]


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One compacted segment a manifest declares current.

    ``digest`` is the BLAKE3 hex of the file's bytes (None in manifests written before
    it was recorded), so ``verify`` notices any changed byte of a compacted segment.
    """

    file: str
    rows: int
    units: tuple[Unit, ...]
    digest: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "file": self.file,
            "rows": self.rows,
            "units": [u.to_json() for u in self.units],
        }
        if self.digest is not None:
            out["b3"] = self.digest
        return out


def manifest_checksum(segments: object, marks: object = None) -> str:
    """BLAKE3 over a manifest's ``segments`` (and ``marks``), canonical JSON.

    It covers every field. Manifests written before marks existed summed ``segments``
    alone, and are still read.
    """
    doc = segments if marks is None else {"marks": marks, "segments": segments}
    return blake3(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def manifest_bytes(entries: list[ManifestEntry], marks: list[Any]) -> bytes:
    """A manifest's file content: its entries, writers' marks (JSON rows), the checksum."""
    segments = [e.to_json() for e in entries]
    checksum = manifest_checksum(segments, marks)
    return json.dumps({"segments": segments, "marks": marks, "checksum": checksum}).encode()


@dataclass(slots=True)
class Listing:
    """The event files found in one pass over ``events/``."""

    segments: dict[str, list[tuple[int, int, Path]]] = field(default_factory=dict)
    live: dict[str, list[tuple[int, Path]]] = field(default_factory=dict)
    compacted: list[Path] = field(default_factory=list)
    manifests: list[tuple[int, Path]] = field(default_factory=list)
    temps: list[Path] = field(default_factory=list)
    strays: list[Path] = field(default_factory=list)


def list_files(root: Path) -> Listing:
    """Classify every file under ``<root>/events``; unknown names are strays.

    Writer directories are listed before the manifests: a writer segment is deleted
    only after a manifest covering it is committed, so a segment missing from the
    listing is covered by the manifest read next. Each writer directory is listed
    twice and the names united: one listing may miss both a segment renamed in while
    it ran and the live log unlinked meanwhile, but the segment exists before the
    second listing starts.
    """
    out = Listing()
    events = root / EVENTS
    if not events.is_dir():
        return out
    subs = sorted(events.iterdir(), key=lambda p: (p.name in (COMPACTED, MANIFESTS), p.name))
    for sub in subs:
        try:
            names = set(os.listdir(sub))
        except NotADirectoryError:
            (out.temps if sub.name.startswith(TMP_PREFIX) else out.strays).append(sub)
            continue
        if sub.name not in (COMPACTED, MANIFESTS):
            names |= set(os.listdir(sub))
        for name in sorted(names):
            _classify(out, sub.name, sub / name)
    return out


def _classify(out: Listing, dirname: str, f: Path) -> None:
    name = f.name
    if name.startswith(TMP_PREFIX):
        out.temps.append(f)
    elif dirname == COMPACTED and COMPACTED_RE.fullmatch(name):
        out.compacted.append(f)
    elif dirname == MANIFESTS and (m := MANIFEST_RE.fullmatch(name)):
        out.manifests.append((int(m[1]), f))
    elif dirname not in (COMPACTED, MANIFESTS) and WRITER_RE.fullmatch(dirname):
        if m := SEGMENT_RE.fullmatch(name):
            out.segments.setdefault(dirname, []).append((int(m[1]), int(m[2]), f))
        elif m := LIVE_RE.fullmatch(name):
            out.live.setdefault(dirname, []).append((int(m[1]), f))
        elif name == RESERVE_NAME:
            pass  # the writer's reserve: no events in it
        else:
            out.strays.append(f)
    else:
        out.strays.append(f)


def read_manifest(path: Path) -> list[ManifestEntry]:
    """Parse a manifest and check its checksum; raises :class:`CorruptError` naming it.

    Manifests written before the checksum existed have none and are read as they are.
    """
    try:
        doc = read_json(path)
    except LedgerError as exc:
        raise CorruptError(exc.message, path=path, fix=_MANIFEST_FIX) from None
    if "checksum" in doc and doc["checksum"] != manifest_checksum(
        doc.get("segments"), doc.get("marks")
    ):
        raise CorruptError(
            "manifest does not match its checksum (altered or damaged)",
            path=path,
            fix=_MANIFEST_FIX,
        )
    try:
        return [
            ManifestEntry(
                str(e["file"]),
                int(e["rows"]),
                tuple(Unit.from_json(u) for u in e["units"]),
                str(e["b3"]) if "b3" in e else None,
            )
            for e in doc["segments"]
        ]
    except (KeyError, TypeError, ValueError):
        raise CorruptError("manifest is malformed", path=path, fix=_MANIFEST_FIX) from None


_MANIFEST_FIX = (
    "restore it from a backup; the manifest before it (if kept) lists the previous "
    "compaction's files"
)


def read_manifest_marks(path: Path) -> list[list[Any]]:
    """The writers' marks a manifest records, as JSON rows ``[writer, last, head]``.

    Call after :func:`read_manifest` accepted the file (its checksum covers them).
    Manifests from before marks existed have none.

    Raises:
        CorruptError: the marks are malformed.
    """
    marks = read_json(path).get("marks", [])
    ok = isinstance(marks, list) and all(
        isinstance(m, list)
        and len(m) == 3
        and isinstance(m[0], str)
        and isinstance(m[1], int)
        and isinstance(m[2], str)
        for m in marks
    )
    if not ok:
        raise CorruptError("manifest marks are malformed", path=path, fix=_MANIFEST_FIX)
    return marks


def latest_manifest(listing: Listing) -> tuple[int, list[ManifestEntry]]:
    """The highest-numbered manifest (0 and nothing if none)."""
    if not listing.manifests:
        return 0, []
    number, path = max(listing.manifests)
    return number, read_manifest(path)


def covered_units(entries: list[ManifestEntry]) -> set[tuple[str, int, int]]:
    """(writer, first, last) of every unit the manifest's segments contain."""
    return {(u.writer, u.first, u.last) for e in entries for u in e.units}


def read_all(root: Path) -> tuple[pa.Table, list[str]]:
    """Every event of the ledger, deduplicated by ``event_id`` and ordered.

    Returns the table (with a ``_src`` column indexing the returned file names) and
    the file names. The read is retried when a file vanishes under a concurrent seal
    or compaction, or when a writer's ranges show a hole (a directory listing can miss
    a segment renamed in while its live log is unlinked); so each writer's events are
    a gap-free prefix of its sequence.
    """
    result = None
    for attempt in range(RETRIES):
        try:
            result, gaps = _read_once(root)
        except FileNotFoundError:
            continue
        if not gaps:
            return result
        time.sleep(0.001 * attempt)
    if result is not None:
        return result  # a real hole: `verify` reports it; reads still return the rest
    raise LedgerError(
        f"event files kept vanishing during {RETRIES} reads",
        path=root / EVENTS,
        fix="retry; is a compaction looping?",
    )


def _read_once(root: Path) -> tuple[tuple[pa.Table, list[str]], bool]:
    listing = list_files(root)
    _, entries = latest_manifest(listing)
    covered = covered_units(entries)
    tables: list[pa.Table] = []
    names: list[str] = []
    ranges: list[tuple[str, int, int]] = []

    def add(table: pa.Table, path: Path) -> None:
        if table.num_rows:
            src = pa.array([len(names)] * table.num_rows, pa.int32())
            tables.append(table.append_column("_src", src))
        names.append(str(path))

    events = root / EVENTS
    for entry in entries:
        table, _ = read_segment(events / entry.file)
        add(table, events / entry.file)
        ranges += [(u.writer, u.first, u.last) for u in entry.units]
    for writer, segs in listing.segments.items():
        for first, last, path in segs:
            if (writer, first, last) not in covered:
                add(read_segment(path)[0], path)
                ranges.append((writer, first, last))
    for writer, lives in listing.live.items():
        for first, path in lives:
            batches = read_live(path).batches  # damage: `verify` reports it
            rows = sum(b.num_rows for b in batches)
            add(pa.Table.from_batches(batches, SCHEMA), path)
            if rows:
                ranges.append((writer, first, first + rows - 1))
    return (dedup_sort(tables), names), has_gap(ranges)


def has_gap(ranges: list[tuple[str, int, int]]) -> bool:
    """Whether some writer's ranges leave a hole before their end (or start above 0)."""
    ranges.sort()
    writer, reach = None, -1
    for w, first, last in ranges:
        if w != writer:
            writer, reach = w, -1
        if first > reach + 1:
            return True
        reach = max(reach, last)
    return False


def _is_sorted(table: pa.Table) -> bool:
    """Whether rows are already in (time, writer, seq, event_id) order (vectorized).

    A compacted ledger usually is, and checking costs a fraction of sorting.
    """
    n = table.num_rows
    if n < 2:
        return True
    still_tied = None
    for name in ("time", "writer_id", "seq", "event_id"):
        col = table.column(name)
        a, b = col.slice(0, n - 1), col.slice(1)
        less, equal = pc.less(a, b), pc.equal(a, b)
        if still_tied is None:
            ok, still_tied = less, equal
        else:
            ok = pc.or_(ok, pc.and_(still_tied, less))
            still_tied = pc.and_(still_tied, equal)
    return bool(pc.all(pc.or_(ok, still_tied)).as_py())


def dedup_sort(tables: list[pa.Table]) -> pa.Table:
    """Concatenate, order by (time, writer, seq) and drop repeated ``event_id`` rows.

    Copies of one record share time, writer and seq, so after the sort they are
    adjacent and one vectorized comparison removes them.
    """
    if not tables:
        return SCHEMA.empty_table().append_column("_src", pa.array([], pa.int32()))
    table = pa.concat_tables(tables)
    if not _is_sorted(table):
        keys = [*SORT_KEYS, ("event_id", "ascending")]
        table = table.take(pc.sort_indices(table, sort_keys=keys))
    n = table.num_rows
    if n < 2:
        return table
    ids = table.column("event_id").combine_chunks()
    differs = pc.not_equal(ids.slice(1), ids.slice(0, n - 1))
    if pc.all(differs).as_py():
        return table
    keep = pa.concat_arrays([pa.array([True]), differs])
    return table.filter(keep)
