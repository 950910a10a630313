"""Compaction: fewer, larger segments, committed by a new numbered manifest.

DuckDB (and any reader) slows about linearly with the number of files, so compaction
merges every writer segment not yet covered, plus small compacted segments, into
segments of up to ``target_rows`` rows, and seals live logs whose writer is dead (its
flock is free). It commits by creating manifest ``n + 1`` exclusively: two compactions
racing both write their files, one wins the name, the loser deletes its own output.
Superseded files are deleted only after the commit; readers retry if a file vanishes
and deduplicate by ``event_id`` if they see a file twice, so writers and readers never
wait for a compaction.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from aka_ledger._envelope import SCHEMA
from aka_ledger._errors import CorruptError
from aka_ledger._frames import Damage, LiveScan, scan_live
from aka_ledger._fs import (
    CAS,
    CAS_TEMP_STALE_S,
    COMPACTED,
    EVENTS,
    MANIFESTS,
    QUARANTINE,
    Unit,
    chain_hash,
    fsync_dir,
    segment_name,
    temp_abandoned,
    write_atomic,
)
from aka_ledger._marks import Mark, merge, observe_retrying
from aka_ledger._scan import (
    Listing,
    ManifestEntry,
    covered_units,
    dedup_sort,
    latest_manifest,
    list_files,
    manifest_bytes,
    read_manifest_marks,
)
from aka_ledger._segments import read_segment, write_segment
from aka_ledger._writer import sealed_tail

DEFAULT_TARGET_ROWS = 2_000_000


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What a compaction did.

    Attributes:
        manifest: number of the manifest it committed (None if nothing to do or lost a race).
        merged_files: segment files merged.
        written_files: compacted segment files written.
        removed_files: superseded files deleted after the commit.
        sealed_orphans: live logs of dead writers sealed into segments.
        rows: rows in the segments written.
        quarantined: live logs holding bytes that could not be decoded, moved (never
            deleted) to ``<root>/quarantine/`` after their intact prefix was sealed.
    """

    manifest: int | None = None
    merged_files: int = 0
    written_files: int = 0
    removed_files: int = 0
    sealed_orphans: int = 0
    rows: int = 0
    quarantined: tuple[str, ...] = ()


def compact(
    root: Path, *, target_rows: int | None = None, own_writer: str | None = None
) -> CompactionResult:
    """Seal orphaned live logs, merge small segments, commit a manifest, clean up."""
    target = target_rows or DEFAULT_TARGET_ROWS
    sealed, quarantined = seal_orphans(root, skip=own_writer)
    listing = list_files(root)
    remove_stale_temps(root, listing.temps)
    number, entries = latest_manifest(listing)
    covered = covered_units(entries)
    events = root / EVENTS
    inputs: list[Path] = [
        path
        for writer, segs in listing.segments.items()
        for first, last, path in segs
        if (writer, first, last) not in covered
    ]
    keep = [e for e in entries if e.rows >= target // 2]
    small = [e for e in entries if e.rows < target // 2]
    if not inputs and len(small) < 2:
        return CompactionResult(sealed_orphans=sealed, quarantined=quarantined)
    inputs += [events / e.file for e in small]
    try:
        written, rows = _write_outputs(events, number + 1, inputs, target)
    except FileNotFoundError:  # a concurrent compaction removed an input: try next time
        return CompactionResult(sealed_orphans=sealed, quarantined=quarantined)
    (events / MANIFESTS).mkdir(exist_ok=True)
    path = events / MANIFESTS / f"{number + 1:08d}.json"
    marks = [m.to_json() for m in _marks(root, number, keep + written)]
    data = manifest_bytes(keep + written, marks)
    if not write_atomic(path, data, tag="manifest", exclusive=True):
        for e in written:
            (events / e.file).unlink(missing_ok=True)
        return CompactionResult(sealed_orphans=sealed, quarantined=quarantined)
    removed = _remove_superseded(root, number + 1)
    return CompactionResult(
        number + 1, len(inputs), len(written), removed, sealed, rows, quarantined
    )


def _marks(root: Path, number: int, entries: list[ManifestEntry]) -> list[Mark]:
    """The marks manifest ``number + 1`` records: the last one's, moved on to what is seen.

    A mark is never lowered: a writer whose events were lost since the last manifest
    keeps its old mark, so ``verify`` keeps naming the loss.
    """
    old: list[Mark] = []
    if number:
        prev = root / EVENTS / MANIFESTS / f"{number:08d}.json"
        with contextlib.suppress(FileNotFoundError, CorruptError):
            old = [Mark.from_json(m) for m in read_manifest_marks(prev)]
    return merge(old, observe_retrying(root, entries).values())


def _write_outputs(
    events: Path, number: int, inputs: list[Path], target: int
) -> tuple[list[ManifestEntry], int]:
    """Merge ``inputs`` into files of at most ``target`` rows (inputs are never split)."""
    (events / COMPACTED).mkdir(exist_ok=True)
    token = secrets.token_hex(6)  # racing compactions never write the same name
    groups: list[list[tuple[pa.Table, list[Unit]]]] = [[]]
    rows_in_group = 0
    for path in inputs:
        table, units = read_segment(path)
        if groups[-1] and rows_in_group + table.num_rows > target:
            groups.append([])
            rows_in_group = 0
        groups[-1].append((table, units))
        rows_in_group += table.num_rows
    written: list[ManifestEntry] = []
    total = 0
    for i, group in enumerate(groups):
        name = f"{number:08d}-{token}-{i:04d}.parquet"
        tables = [t.append_column("_src", pa.array([0] * t.num_rows, pa.int32())) for t, _ in group]
        merged = dedup_sort(tables).drop_columns(["_src"])
        units = sorted({u for _, us in group for u in us}, key=lambda u: (u.writer, u.first))
        digest = write_segment(events / COMPACTED / name, merged, units, tag="compact")
        written.append(ManifestEntry(f"{COMPACTED}/{name}", merged.num_rows, tuple(units), digest))
        total += merged.num_rows
    return written, total


def _remove_superseded(root: Path, number: int) -> int:
    """Delete what manifest ``number`` (just committed) makes redundant."""
    listing = list_files(root)
    latest, entries = latest_manifest(listing)
    if latest != number:
        return 0  # a newer compaction committed meanwhile; it cleans up after itself
    covered = covered_units(entries)
    current = {(root / EVENTS / e.file) for e in entries}
    doomed = [
        path
        for writer, segs in listing.segments.items()
        for first, last, path in segs
        if (writer, first, last) in covered
    ]
    doomed += [p for p in listing.compacted if p not in current and _older(p, number)]
    doomed += [p for n, p in listing.manifests if n < number - 1]
    for path in doomed:
        path.unlink(missing_ok=True)
    return len(doomed)


def _older(path: Path, number: int) -> bool:
    """Compacted files of earlier compactions (never an in-flight newer one)."""
    return int(path.name[:8]) < number


STALE_TMP_S = CAS_TEMP_STALE_S


def remove_stale_temps(root: Path, temps: list[Path]) -> int:
    """Delete temporary files left by crashed writes.

    An event-file temp is held under ``flock`` by the process writing it, so one whose
    lock is free (and that is not brand new) was abandoned by a killed process and goes
    now: a kill during compaction never keeps ``verify`` red after the next compaction.
    A content-store put holds no lock; its temp goes once it is an hour old (a writer
    reopening with its id removes its own at once).
    """
    now = time.time()
    cutoff = now - STALE_TMP_S
    cas_tmp = root / CAS / "tmp"
    removed = 0
    for path in temps:
        if temp_abandoned(path, now):
            path.unlink(missing_ok=True)
            removed += 1
    for path in list(cas_tmp.iterdir()) if cas_tmp.is_dir() else []:
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except FileNotFoundError:
            continue
    return removed


def seal_orphans(root: Path, *, skip: str | None) -> tuple[int, tuple[str, ...]]:
    """Seal live logs whose writer is gone (their flock can be taken) into segments.

    Returns how many were sealed and the quarantine paths of those that held damage.
    """
    sealed = 0
    quarantined: list[str] = []
    listing: Listing = list_files(root)
    for writer, lives in listing.live.items():
        if writer == skip:
            continue
        for first, path in sorted(lives):
            try:
                n, moved = _seal_one(root, writer, first, path)
            except FileNotFoundError:
                continue  # its writer came back and took over meanwhile
            sealed += n
            if moved is not None:
                quarantined.append(str(moved))
    return sealed, tuple(quarantined)


def _scan(data: bytes, path: Path) -> LiveScan:
    """The log's scan; a bad header is damage over the whole file (nothing intact)."""
    try:
        return scan_live(data, path)
    except CorruptError as exc:
        scan = LiveScan(size=len(data))
        scan.damage.append(Damage(0, len(data), exc.message))
        return scan


def quarantine(root: Path, writer: str, path: Path) -> Path:
    """Move a live log into ``<root>/quarantine/<writer>/`` under a name not yet taken."""
    dest_dir = root / QUARANTINE / writer
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / path.name
    n = 1
    while dest.exists():
        dest = dest_dir / f"{path.name}.{n}"
        n += 1
    os.rename(path, dest)
    fsync_dir(dest_dir)
    fsync_dir(path.parent)
    return dest


def _seal_one(root: Path, writer: str, first: int, path: Path) -> tuple[int, Path | None]:
    """Seal one orphaned log; a damaged one has its intact prefix sealed and is quarantined."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return 0, None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0, None  # its writer is alive
        try:
            if os.stat(path).st_ino != os.fstat(fd).st_ino:
                return 0, None
        except FileNotFoundError:
            return 0, None  # sealed by someone else meanwhile
        data = os.pread(fd, os.fstat(fd).st_size, 0)
        scan = _scan(data, path)
        rows = sum(b.num_rows for b in scan.batches)
        tail = sealed_tail(root, writer)
        next_seq = tail.last + 1 if tail else 0
        if rows and first == next_seq:
            table = pa.Table.from_batches(scan.batches, SCHEMA)
            prev = tail.chain if tail else ""
            ids = table.column("event_id").to_pylist()
            unit = Unit(writer, first, first + rows - 1, prev, chain_hash(prev, ids))
            seg = path.parent / segment_name(first, first + rows - 1)
            write_segment(seg, table, [unit], tag=writer)
        elif rows and first + rows - 1 >= next_seq:
            return 0, None  # not contiguous with the sealed history: leave it for verify
        if scan.damaged:
            return (1 if rows else 0), quarantine(root, writer, path)
        path.unlink(missing_ok=True)
        fsync_dir(path.parent)
        return (1 if rows else 0), None
    finally:
        os.close(fd)
