"""High-water marks: how far each writer had got, recorded where losing its tail shows.

A writer's own files cannot witness their own loss: delete the last records of a live
log, a writer's last segment or its whole folder, and what is left is a shorter but
self-consistent history (ids hash, chains link, sequences have no gap). A :class:`Mark`
(writer, last sequence number, head over every event id up to it) recorded *elsewhere*
makes the loss visible: every compaction manifest carries the marks of every writer it
saw (sealed or live), carried forward from the manifest before; an application may
record marks in its own events (:meth:`Ledger.marks`) and hand them back to
:meth:`Ledger.verify`. ``verify`` then names each writer whose events no longer reach
its mark, or whose events up to it are not the ones marked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from blake3 import blake3

from aka_ledger._envelope import SCHEMA
from aka_ledger._errors import LedgerError
from aka_ledger._fs import EVENTS
from aka_ledger._scan import RETRIES, Listing, ManifestEntry, covered_units
from aka_ledger._segments import read_live

_COLS = ["writer_id", "seq", "event_id"]


@dataclass(frozen=True, slots=True)
class Mark:
    """A writer's high-water mark.

    Attributes:
        writer: the writer id.
        last: its highest sequence number seen.
        head: BLAKE3 hex over its event ids of seq ``0..last`` in order, one per line;
            unlike a sealed unit's chain it does not depend on where the writer sealed.
    """

    writer: str
    last: int
    head: str

    def to_json(self) -> list[Any]:
        return [self.writer, self.last, self.head]

    @classmethod
    def from_json(cls, row: Any) -> Mark:
        w, last, head = row
        return cls(str(w), int(last), str(head))


def head_of(event_ids: Iterable[str]) -> str:
    """The head over event ids in sequence order (see :class:`Mark`)."""
    return blake3("\n".join(event_ids).encode()).hexdigest()


def by_writer(tables: Iterable[pa.Table]) -> dict[str, dict[int, list[str]]]:
    """Writer -> seq -> the distinct event ids stored under it (normally one)."""
    parts = [t.select(_COLS).replace_schema_metadata(None) for t in tables if t.num_rows]
    out: dict[str, dict[int, list[str]]] = {}
    if not parts:
        return out
    rows = pa.concat_tables(parts).group_by(_COLS).aggregate([])
    rows = rows.sort_by([("writer_id", "ascending"), ("seq", "ascending")])
    for w, s, e in zip(*(rows.column(c).to_pylist() for c in _COLS), strict=True):
        out.setdefault(w, {}).setdefault(s, []).append(e)
    return out


def marks_of(tables: Iterable[pa.Table]) -> dict[str, Mark]:
    """Each writer's mark over the events in ``tables`` (a writer with a gap: up to it)."""
    out: dict[str, Mark] = {}
    for writer, seqs in by_writer(tables).items():
        ids: list[str] = []
        while len(ids) in seqs and len(seqs[len(ids)]) == 1:
            ids.append(seqs[len(ids)][0])
        if ids:
            out[writer] = Mark(writer, len(ids) - 1, head_of(ids))
    return out


def merge(old: Iterable[Mark], new: Iterable[Mark]) -> list[Mark]:
    """Per writer the further mark; an old mark is never forgotten (its loss must show)."""
    best: dict[str, Mark] = {}
    for m in [*old, *new]:
        if m.writer not in best or m.last > best[m.writer].last:
            best[m.writer] = m
    return [best[w] for w in sorted(best)]


def shortfalls(
    present: dict[str, dict[int, list[str]]], expected: Iterable[tuple[str, Mark]]
) -> list[tuple[str, str]]:
    """(path, message) for each mark the ``present`` events do not reach or match.

    ``expected`` pairs each mark with where it was recorded (named in the message).
    """
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, int, str]] = set()
    for where, mark in expected:
        if (mark.writer, mark.last, mark.head) in seen:
            continue
        seen.add((mark.writer, mark.last, mark.head))
        path = f"events/{mark.writer}"
        seqs = present.get(mark.writer)
        if not seqs:
            out.append(
                (
                    path,
                    f"writer {mark.writer} is missing: {where} recorded its events through "
                    f"seq {mark.last}, and none is left (its live log or segments were "
                    f"deleted): {mark.last + 1} event(s) missing",
                )
            )
            continue
        have = max(seqs)
        if have < mark.last:
            out.append(
                (
                    path,
                    f"writer {mark.writer} ends at seq {have} but {where} recorded it through "
                    f"seq {mark.last}: seq {have + 1}..{mark.last} missing (a deleted tail)",
                )
            )
            continue
        ids = [seqs[s][0] for s in range(mark.last + 1) if s in seqs]
        if len(ids) == mark.last + 1 and head_of(ids) != mark.head:
            out.append(
                (
                    path,
                    f"events 0..{mark.last} of writer {mark.writer} are not the ones {where} "
                    "recorded (replaced or altered)",
                )
            )
    return out


def observe(root: Path, listing: Listing, entries: list[ManifestEntry]) -> dict[str, Mark]:
    """Every writer's mark over the files a compaction is about to commit, and live logs.

    Reads only the id columns of segments; a file that vanished meanwhile (sealed or
    merged by someone else) makes the caller retry, and damage is left for ``verify``.
    """
    events = root / EVENTS
    covered = covered_units(entries)
    paths = [events / e.file for e in entries]
    paths += [
        p
        for w, segs in listing.segments.items()
        for first, last, p in segs
        if (w, first, last) not in covered
    ]
    tables: list[pa.Table] = []
    for path in paths:
        try:
            tables.append(pq.read_table(path, columns=_COLS, page_checksum_verification=True))
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException):
            continue  # damage: verify names the file
    for lives in listing.live.values():
        for _, path in lives:
            try:
                batches = read_live(path).batches
            except LedgerError:
                continue
            tables.append(pa.Table.from_batches(batches, SCHEMA).select(_COLS))
    return marks_of(tables)


def observe_retrying(root: Path, entries: list[ManifestEntry]) -> dict[str, Mark]:
    """:func:`observe` over a fresh listing, retried while files vanish under it."""
    from aka_ledger._scan import list_files

    for _ in range(RETRIES):
        try:
            return observe(root, list_files(root), entries)
        except FileNotFoundError:
            continue
    return {}
