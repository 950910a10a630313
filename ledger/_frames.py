"""Live-log records with checksums, and a reader that tells a torn tail from damage.

A live log (format 2) is the schema message, marked ``aka.live = 2``, then one *frame*
per appended record batch::

    magic "AKR\\x01" | length (u32 LE) | BLAKE3(length)[:4] | BLAKE3(length + body)[:16]
    | 4 zero bytes | body

where ``body`` is the batch as one Arrow IPC message (the padding keeps it 8-byte
aligned, as Arrow wants its buffers). The length has its own check, so
a flipped length is damage, never mistaken for a record cut short. A process killed
mid-append leaves at most a *prefix* of its last frame: a torn tail, which loses only
the record being written (and the writer cuts it off on reopen). Anything else that
fails a check is *damage*: the reader keeps the records before it, looks for the next
intact frame to count what lies beyond, and reports both, so nothing is dropped
silently. Format 1 logs (a plain Arrow IPC stream, no checksums) are still read; every
batch, of either format, is validated in full before use, because Arrow trusts the
offsets it is given and a damaged one can crash the process.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from blake3 import blake3

from aka_ledger._envelope import SCHEMA
from aka_ledger._errors import CorruptError

LIVE_KEY = b"aka.live"
HEADER = SCHEMA.with_metadata({LIVE_KEY: b"2"}).serialize().to_pybytes()
HEADER_V1 = SCHEMA.serialize().to_pybytes()
MAGIC = b"AKR\x01"
_HEAD = struct.Struct("<4sI4s16s4x")
FRAME_OVERHEAD = _HEAD.size
MAX_BODY = 1 << 31  # a length above this is damage, not a record


@dataclass(frozen=True, slots=True)
class Damage:
    """Bytes of a live log that could not be decoded.

    Attributes:
        offset: where the undecodable bytes start.
        length: how many bytes up to the next intact record (or the end of the file).
        reason: what failed (bad header, magic, length check, checksum, Arrow message).
    """

    offset: int
    length: int
    reason: str


@dataclass(slots=True)
class LiveScan:
    """What a live log holds.

    Attributes:
        batches: the intact records before the first damage, in order.
        end: the byte offset where those records end.
        size: the file size.
        torn: the file ends in a prefix of a record (a write cut short by a crash).
        damage: undecodable regions, in file order (empty for a sound log).
        beyond: intact records found after the first damage (not in ``batches``: their
            sequence numbers follow a hole).
        format: 2 (checksummed frames) or 1 (a plain Arrow IPC stream).
    """

    batches: list[pa.RecordBatch] = field(default_factory=list)
    end: int = 0
    size: int = 0
    torn: bool = False
    damage: list[Damage] = field(default_factory=list)
    beyond: int = 0
    format: int = 2

    @property
    def damaged(self) -> bool:
        return bool(self.damage)


def frame_head(body_size: int, body: pa.Buffer | bytes) -> bytes:
    """The 28 bytes written before ``body``; the body follows in the same write."""
    size = struct.pack("<I", body_size)
    h = blake3(size)
    h.update(body)
    return _HEAD.pack(MAGIC, body_size, blake3(size).digest(4), h.digest(16))


def scan_live(data: bytes, path: Path) -> LiveScan:
    """Read a live log's bytes (either format); never raises for damage after the header.

    Raises:
        CorruptError: the file does not start like a live log of this schema (and is
            not an empty or torn header either).
    """
    scan = LiveScan(size=len(data))
    for header, fmt in ((HEADER, 2), (HEADER_V1, 1)):
        if data.startswith(header):
            scan.format, scan.end = fmt, len(header)
            break
    else:
        if len(data) < len(HEADER) and (HEADER.startswith(data) or HEADER_V1.startswith(data)):
            scan.torn = bool(data)
            return scan
        raise CorruptError(
            "not a live log of this schema (bad header)",
            path=path,
            fix="restore it from a backup, or move it out of the ledger directory "
            "(`aka ledger compact` quarantines it)",
        )
    if scan.format == 1:
        _scan_v1(data, scan)
    else:
        _scan_v2(data, scan)
    return scan


def _batch(body: memoryview | bytes) -> pa.RecordBatch:
    """Decode and fully validate one IPC message; raises ValueError if it is not sound."""
    try:
        msg = pa.ipc.read_message(pa.py_buffer(body))
        batch = pa.ipc.read_record_batch(msg, SCHEMA)
        batch.validate(full=True)
    except (OSError, pa.ArrowException, EOFError) as exc:
        raise ValueError(f"not a record batch of this schema ({exc})") from None
    return batch


def _check(data: bytes, pos: int) -> tuple[str, int]:
    """At ``pos``: ("ok", end), ("torn", len(data)) or (reason, 0) for damage."""
    view = memoryview(data)
    rest = len(data) - pos
    if rest < FRAME_OVERHEAD:
        tail = data[pos:]
        if MAGIC.startswith(tail[:4]) or not any(tail):
            return "torn", len(data)
        return "bad record magic", 0
    magic, n, size_check, digest = _HEAD.unpack_from(data, pos)
    if magic != MAGIC:
        return ("torn", len(data)) if not any(view[pos:]) else ("bad record magic", 0)
    if blake3(struct.pack("<I", n)).digest(4) != size_check or n > MAX_BODY:
        return "record length fails its check", 0
    start = pos + FRAME_OVERHEAD
    if start + n > len(data):
        return "torn", len(data)
    size = struct.pack("<I", n)
    h = blake3(size)
    h.update(view[start : start + n])
    if h.digest(16) != digest:
        return "record checksum mismatch", 0
    return "ok", start + n


def _scan_v2(data: bytes, scan: LiveScan) -> None:
    pos = scan.end
    while pos < len(data):
        status, end = _check(data, pos)
        if status == "ok":
            try:
                batch = _batch(memoryview(data)[pos + FRAME_OVERHEAD : end])
            except ValueError as exc:
                status = str(exc)
            else:
                if scan.damage:
                    scan.beyond += 1
                else:
                    scan.batches.append(batch)
                    scan.end = end
                pos = end
                continue
        if status == "torn":
            scan.torn = True
            return
        nxt = _resync(data, pos + 1)
        scan.damage.append(Damage(pos, nxt - pos, status))
        pos = nxt


def _resync(data: bytes, pos: int) -> int:
    """The offset of the next intact frame at or after ``pos`` (or the end)."""
    while (pos := data.find(MAGIC, pos)) >= 0:
        if _check(data, pos)[0] == "ok":
            return pos
        pos += 1
    return len(data)


def _scan_v1(data: bytes, scan: LiveScan) -> None:
    """A format 1 log: IPC messages without checksums; the first bad one ends the read.

    Without checksums a flipped byte cannot be told from a write cut short unless the
    message still parses; what does not parse at the very end is taken as torn, as
    format 1 always did, but every batch is now validated before use.
    """
    reader = pa.BufferReader(data)
    reader.seek(scan.end)
    while scan.end < len(data):
        try:
            msg = pa.ipc.read_message(reader)
            batch = pa.ipc.read_record_batch(msg, SCHEMA)
            batch.validate(full=True)
        except (OSError, pa.ArrowException, EOFError):
            scan.torn = True
            return
        scan.batches.append(batch)
        scan.end = reader.tell()
