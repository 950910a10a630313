"""``verify``: check everything recorded and report each problem with its file.

Checks, in order: the directory's format, stray and leftover files, every segment and
manifest parses, every record hashes to its ``event_id``, every payload decodes with
the registry, each writer's hash chain holds over its sealed units, no writer has a
sequence gap or two different events under one sequence number, and every digest an
event references exists in the content store and hashes right (the content store's
checks: :mod:`aka_ledger._verify_cas`). Verify only reads.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from aka_ledger._authority import MAC_MARK, mac_id, record_key
from aka_ledger._decode import decode
from aka_ledger._envelope import SCHEMA, event_id
from aka_ledger._errors import LedgerError
from aka_ledger._frames import LiveScan
from aka_ledger._fs import (
    CAS,
    COMPACTED,
    EVENTS,
    META_FILE,
    QUARANTINE,
    SIDECAR,
    TMP_PREFIX,
    Unit,
    chain_hash,
    ensure_root,
    temp_abandoned,
)
from aka_ledger._marks import Mark, by_writer, shortfalls
from aka_ledger._scan import (
    covered_units,
    latest_manifest,
    list_files,
    read_manifest,
    read_manifest_marks,
)
from aka_ledger._segments import file_digest, read_live, read_segment
from aka_ledger._verify_cas import check_cas_layout, check_digests, digests_of

if TYPE_CHECKING:
    from aka_ledger._ledger import Ledger, Problem


class _Report:
    def __init__(self) -> None:
        from aka_ledger._ledger import Problem

        self._problem = Problem
        self.problems: list[Problem] = []

    def add(self, path: object, message: str) -> None:
        self.problems.append(self._problem(str(path), message))


def verify(
    ledger: Ledger, *, deep: bool = False, marks: Iterable[tuple[str, Mark]] = ()
) -> list[Problem]:
    """All problems found (empty if the ledger is sound).

    Each writer must reach the mark the latest manifest recorded for it, and each of
    ``marks`` (an application's own records, paired with where each was recorded).
    With ``deep``, blobs reachable *through* referenced blobs (the files of a tree, the
    blobs an arm or a config names) are checked too: every referenced blob is read and
    each ``b3:`` digest in it followed, which reads every such blob once.
    """
    report = _Report()
    if ledger.root is None:
        table, names = ledger.table()
        _check_rows(report, ledger, table, names[0])
        for path, message in shortfalls(by_writer([table]), marks):
            report.add(path, message)
        check_digests(report.add, ledger, {d: names[0] for d in digests_of(table)}, deep=deep)
        return report.problems
    root = ledger.root
    try:
        ensure_root(root, create=False)
    except LedgerError as exc:
        report.add(exc.path or root, exc.message)
        return report.problems
    tables: list[pa.Table] = []
    units: list[tuple[Unit, pa.Table, str]] = []
    _check_files(report, ledger, root, tables, units)
    _check_chains(report, units)
    _check_sequences(report, tables)
    _check_marks(report, root, tables, marks)
    referenced: dict[str, str] = {}
    for t in tables:
        src = str(t.schema.metadata[b"src"].decode()) if t.schema.metadata else "?"
        for d in digests_of(t):
            referenced.setdefault(d, src)
    check_digests(report.add, ledger, referenced, deep=deep)
    check_cas_layout(report.add, root / CAS)
    return report.problems


def _check_files(
    report: _Report,
    ledger: Ledger,
    root: Path,
    tables: list[pa.Table],
    units: list[tuple[Unit, pa.Table, str]],
) -> None:
    """Parse every event file; collect the current ones' rows and chain units."""
    temps: list[Path] = []  # the ledger file's own, when a process creating it was killed
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(TMP_PREFIX) and entry.is_file():
            temps.append(entry)
        elif entry.name not in (META_FILE, EVENTS, CAS, SIDECAR, QUARANTINE):
            report.add(entry, "stray file: not part of a ledger; move it out of the directory")
    listing = list_files(root)
    for path in listing.strays:
        report.add(path, "stray file: not part of a ledger; move it out of the directory")
    now = time.time()
    for path in temps + listing.temps:
        if temp_abandoned(path, now):  # one being written holds its lock
            report.add(
                path,
                "leftover temporary file of an interrupted write; safe to delete "
                "(`aka ledger compact` removes it)",
            )
    for _, path in listing.manifests:
        try:
            read_manifest(path)
        except LedgerError as exc:
            report.add(path, exc.message)
    try:
        _, entries = latest_manifest(listing)
    except LedgerError:
        entries = []
    covered = covered_units(entries)
    current = {str(root / EVENTS / e.file) for e in entries}
    for e in entries:
        _check_listed(report, root / EVENTS / e.file, e.digest)
    paths = [p for segs in listing.segments.values() for _, _, p in segs] + listing.compacted
    for path in paths:
        try:
            table, file_units = read_segment(path)
        except (LedgerError, FileNotFoundError) as exc:
            report.add(path, getattr(exc, "message", "vanished while verifying"))
            continue
        w = path.parent.name
        if w == COMPACTED:
            is_current = str(path) in current
        else:
            is_current = any((w, u.first, u.last) not in covered for u in file_units)
        if is_current:
            _take(report, ledger, table, str(path), tables)
            units += [(u, table, str(path)) for u in file_units]
    for lives in listing.live.values():
        for _, path in lives:
            try:
                scan = read_live(path)
            except (LedgerError, FileNotFoundError) as exc:
                report.add(path, getattr(exc, "message", "vanished while verifying"))
                continue
            _report_damage(report, path, scan)
            _take(report, ledger, pa.Table.from_batches(scan.batches, SCHEMA), str(path), tables)
    _check_quarantine(report, root / QUARANTINE)


def _check_marks(
    report: _Report, root: Path, tables: list[pa.Table], marks: Iterable[tuple[str, Mark]]
) -> None:
    """Every writer still reaches its high-water marks (a deleted tail or writer shows)."""
    expected = list(marks)
    listing = list_files(root)
    if listing.manifests:
        number, path = max(listing.manifests)
        try:
            read_manifest(path)
            rows = read_manifest_marks(path)
        except (LedgerError, FileNotFoundError):
            rows = []  # reported with the manifest's other problems
        where = f"manifest {number}"
        expected = [(where, Mark.from_json(r)) for r in rows] + expected
    for writer_file, message in shortfalls(by_writer(tables), expected):
        report.add(root / writer_file, message)


def _report_damage(report: _Report, path: Path, scan: LiveScan) -> None:
    """Name every damaged region of a live log, with what is read and what is not."""
    for d in scan.damage:
        report.add(
            path,
            f"damaged bytes {d.offset}..{d.offset + d.length} ({d.reason}): events in them "
            f"are missing; {len(scan.batches)} record(s) before the first damage are read, "
            f"{scan.beyond} intact record(s) after it are not",
        )


def _check_quarantine(report: _Report, where: Path) -> None:
    """Quarantined bytes are events the ledger could not decode: never silently fine."""
    if not where.is_dir():
        return
    for f in sorted(p for p in where.rglob("*") if not p.is_dir()):
        report.add(
            f,
            f"quarantined by compaction ({f.stat().st_size} bytes it could not decode): "
            "events in it are missing; inspect it, then move it out of the ledger",
        )


def _check_listed(report: _Report, path: Path, digest: str | None) -> None:
    """A file the latest manifest lists exists and has the bytes it had when listed."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        report.add(path, "listed in the latest manifest but missing")
        return
    try:
        if digest is not None and file_digest(fd) != digest:
            report.add(path, "does not match the digest its manifest recorded (altered or damaged)")
    finally:
        os.close(fd)


def _take(report: _Report, ledger: Ledger, table: pa.Table, path: str, out: list[pa.Table]) -> None:
    _check_rows(
        report, ledger, table.append_column("_src", pa.array([0] * len(table), pa.int32())), path
    )
    out.append(table.replace_schema_metadata({b"src": path.encode()}))


def _check_rows(report: _Report, ledger: Ledger, table: pa.Table, path: str) -> None:
    """Every row hashes to its id and decodes with the registry."""
    c = {
        n: table.column(n).to_pylist()
        for n in (
            "event_id",
            "writer_id",
            "seq",
            "run_id",
            "attempt_key",
            "type",
            "version",
            "payload",
        )
    }
    auth = ledger.authority
    keys: dict[str, bytes | None] = {}
    for i, eid in enumerate(c["event_id"]):
        w, seq, run, tag = c["writer_id"][i], c["seq"][i], c["run_id"][i], c["type"][i]
        fields = (w, seq, run, c["attempt_key"][i], tag, c["version"][i])
        key = None
        if auth is not None and tag in auth.types:
            if run not in keys:
                keys[run] = auth.key_for(run)
            key = keys[run]
        if key is not None:
            if mac_id(key, record_key(*fields) + c["payload"][i].encode()) != eid:
                report.add(
                    path,
                    f"event {eid} ({tag} of run {run}, writer {w}, seq {seq}) is not "
                    "authenticated by its run's key (forged or altered): every read ignores it",
                )
            continue
        if auth is None and eid.startswith(MAC_MARK):
            continue  # MACed: checkable only with the run's key (an Authority)
        if event_id(*fields, c["payload"][i]) != eid:
            report.add(
                path,
                f"event {eid} (writer {w}, seq {seq}) does not hash to its id: the record "
                "was altered",
            )
            return
    try:
        decode(table, ledger.registry, [path])
    except LedgerError as exc:
        report.add(path, exc.message)


def _check_chains(report: _Report, units: list[tuple[Unit, pa.Table, str]]) -> None:
    """Each writer's sealed units link up from seq 0 and hash to their stored chain."""
    by_writer: dict[str, list[tuple[Unit, pa.Table, str]]] = defaultdict(list)
    for item in units:
        by_writer[item[0].writer].append(item)
    for writer, items in sorted(by_writer.items()):
        items.sort(key=lambda x: x[0].first)
        prev, expect_first = "", 0
        seen: set[tuple[int, int]] = set()
        for unit, table, path in items:
            if (unit.first, unit.last) in seen:
                continue  # the same unit in two current files (compaction mid-way)
            seen.add((unit.first, unit.last))
            if unit.first != expect_first or unit.prev != prev:
                report.add(path, f"hash chain of writer {writer} broken at seq {unit.first}")
            mask = pc.and_(
                pc.equal(table.column("writer_id"), writer),
                pc.and_(
                    pc.greater_equal(table.column("seq"), unit.first),
                    pc.less_equal(table.column("seq"), unit.last),
                ),
            )
            rows = table.filter(mask).sort_by("seq")
            if chain_hash(unit.prev, rows.column("event_id").to_pylist()) != unit.chain:
                report.add(
                    path,
                    f"seq {unit.first}..{unit.last} of writer {writer} does not "
                    "match its hash chain: events were removed or altered",
                )
            prev, expect_first = unit.chain, unit.last + 1


def _check_sequences(report: _Report, tables: list[pa.Table]) -> None:
    """No writer skips a sequence number, and no number holds two different events."""
    if not tables:
        return
    cols = ["writer_id", "seq", "event_id"]
    rows = pa.concat_tables([t.select(cols).replace_schema_metadata(None) for t in tables])
    uniq = rows.group_by(cols).aggregate([])
    per_seq = uniq.group_by(["writer_id", "seq"]).aggregate([("event_id", "count")])
    dup = per_seq.filter(pc.greater(per_seq.column("event_id_count"), 1))
    for w, s in zip(
        dup.column("writer_id").to_pylist(), dup.column("seq").to_pylist(), strict=True
    ):
        report.add(f"events/{w}", f"two different events with seq {s}")
    stats = per_seq.group_by("writer_id").aggregate(
        [("seq", "min"), ("seq", "max"), ("seq", "count")]
    )
    for w, lo, hi, n in zip(
        *(stats.column(k).to_pylist() for k in ("writer_id", "seq_min", "seq_max", "seq_count")),
        strict=True,
    ):
        if lo != 0 or hi - lo + 1 != n:
            report.add(f"events/{w}", f"sequence gap: {hi + 1 - n} of seq 0..{hi} missing")
