"""The generic envelope around every event, and its columnar (Arrow) form.

Events are stored as rows of :data:`SCHEMA`; the payload is the model's JSON, written
once at append time (:func:`encode`; reading rows back is :mod:`aka_ledger._decode`). The ``event_id`` is a BLAKE3 hash of everything that identifies a
record (writer, sequence number, run, attempt, type, version, payload), so re-reading a
file twice, a live log next to the segment it was sealed into, or a compacted copy
all collapse to one event when readers deduplicate by ``event_id``.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pyarrow as pa
from blake3 import blake3

from aka_ledger._authority import mac_id, record_key
from aka_ledger._model import EventModel

SCHEMA = pa.schema(
    [
        pa.field("event_id", pa.string(), nullable=False),
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("attempt_key", pa.string()),
        pa.field("writer_id", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("time", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("type", pa.string(), nullable=False),
        pa.field("version", pa.int32(), nullable=False),
        pa.field("payload", pa.string(), nullable=False),
        pa.field("digests", pa.list_(pa.string()), nullable=False),
    ]
)
COLUMNS: tuple[str, ...] = tuple(SCHEMA.names)
_UTC = ZoneInfo("UTC")  # the tzinfo pyarrow returns, so appended and read times compare alike


@dataclass(frozen=True)
class Envelope:
    """One stored event: the decoded payload plus where and when it was recorded.

    Attributes:
        event_id: BLAKE3 (128 bits, hex) of the record's identity; readers dedup by it.
        run_id: the run the event belongs to.
        attempt_key: the attempt within the run, if the event belongs to one.
        writer_id: the process that appended it (node, device, process).
        seq: gap-free per-writer sequence number, starting at 0.
        time: UTC, timezone-aware; never decreases within one writer.
        type: the payload's ``type`` tag.
        version: the schema version the payload was written with (before upcasting).
        payload: the decoded (and upcast) event model.
        digests: content digests the payload references.
    """

    event_id: str
    run_id: str
    attempt_key: str | None
    writer_id: str
    seq: int
    time: datetime
    type: str
    version: int
    payload: EventModel
    digests: tuple[str, ...]


_new = object.__new__
_set = object.__setattr__


def event_id(
    writer_id: str,
    seq: int,
    run_id: str,
    attempt_key: str | None,
    tag: str,
    version: int,
    payload: str,
) -> str:
    """The deterministic id of a record; any change to its identity changes the id."""
    key = f"{writer_id}\x1f{seq}\x1f{run_id}\x1f{attempt_key or ''}\x1f{tag}\x1f{version}\x1f{payload}"
    return blake3(key.encode()).digest(16).hex()


def _event_ids(keys: Iterable[bytes]) -> list[str]:
    """:func:`event_id` of each record key, with one hasher reset per key.

    A new ``blake3`` object per key costs about as much as the hashing; resetting one
    gives the same digests.
    """
    hasher = blake3()
    reset, update, digest = hasher.reset, hasher.update, hasher.digest
    out: list[str] = []
    push = out.append
    for key in keys:
        reset()
        update(key)
        push(digest(16).hex())
    return out


def now_us() -> int:
    """Microseconds since the epoch, UTC (the ``time`` column's unit)."""
    return int(datetime.now(UTC).timestamp() * 1_000_000)


def micros_to_datetime(us: int) -> datetime:
    """Inverse of :func:`now_us`, timezone-aware."""
    return datetime.fromtimestamp(us / 1_000_000, tz=_UTC)


_TIME = pa.timestamp("us", tz="UTC")
_DIGESTS = pa.list_(pa.string())


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic collector while building many acyclic objects.

    Encoding or decoding a batch allocates a few objects per row, none of them
    cyclic; without the pause the collector rescans every live object repeatedly
    and costs about a third of the time.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def encode(
    items: Sequence[tuple[EventModel, str, str | None]],
    *,
    writer_id: str,
    first_seq: int,
    time_us: int,
    macs: Sequence[bytes | None] | None = None,
) -> tuple[pa.RecordBatch, list[Envelope]]:
    """Encode events into one record batch and their envelopes: the append hot path.

    Each payload is serialized once with ``model_dump_json``; digests are only looked
    for when the JSON contains a ``"b3:`` string; constant columns (writer, time) are
    built without per-row Python work. Where ``macs`` gives a key for a row, its id is
    the keyed hash of the same record (:mod:`aka_ledger._authority`).
    """
    n = len(items)
    events = [it[0] for it in items]
    runs = [it[1] for it in items]
    attempts = [it[2] for it in items]
    # The model's own serializer, without model_dump_json's keyword handling: same JSON,
    # kept as UTF-8 bytes (hashed and stored as they are).
    payloads = [e.__pydantic_serializer__.to_json(e) for e in events]
    tags = [e.type for e in events]
    versions = [type(e).schema_version for e in events]
    seqs = range(first_seq, first_seq + n)
    digests = [e.digests() if b'"b3:' in p else () for e, p in zip(events, payloads, strict=True)]
    ids = _event_ids(
        f"{writer_id}\x1f{s}\x1f{r}\x1f{a or ''}\x1f{t}\x1f{v}\x1f".encode() + p
        for s, r, a, t, v, p in zip(seqs, runs, attempts, tags, versions, payloads, strict=True)
    )
    if macs is not None:
        for i, key in enumerate(macs):
            if key is not None:
                record = record_key(writer_id, seqs[i], runs[i], attempts[i], tags[i], versions[i])
                ids[i] = mac_id(key, record + payloads[i])
    when = micros_to_datetime(time_us)
    envs = [
        _set(env := _new(Envelope), "__dict__", {
            "event_id": i, "run_id": r, "attempt_key": a, "writer_id": writer_id, "seq": s,
            "time": when, "type": t, "version": v, "payload": e, "digests": d,
        }) or env
        for i, r, a, s, t, v, e, d in zip(
            ids, runs, attempts, seqs, tags, versions, events, digests, strict=True
        )
    ]  # fmt: skip
    any_digests = any(digests)
    arrays = [
        pa.array(ids, pa.string()),
        pa.array(runs, pa.string()),
        pa.array(attempts, pa.string()),
        pa.array([writer_id] * n, pa.string()),
        pa.array(seqs, pa.int64()),
        pa.array([time_us] * n, pa.int64()).cast(_TIME),
        pa.array(tags, pa.string()),
        pa.array(versions, pa.int32()),
        pa.array(payloads, pa.string()),
        pa.array(digests, _DIGESTS)
        if any_digests
        else pa.ListArray.from_arrays(
            pa.array([0] * (n + 1), pa.int32()), pa.array([], pa.string())
        ),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=SCHEMA), envs


def empty_table() -> pa.Table:
    """A table of :data:`SCHEMA` with no rows."""
    return SCHEMA.empty_table()
