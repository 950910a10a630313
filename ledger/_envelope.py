"""The generic envelope around every event, and its columnar (Arrow) form.

Events are stored as rows of :data:`SCHEMA`; the payload is the model's JSON, written
once at append time. The ``event_id`` is a BLAKE3 hash of everything that identifies a
record (writer, sequence number, run, attempt, type, version, payload), so re-reading a
file twice, a live log next to the segment it was sealed into, or a compacted copy
all collapse to one event when readers deduplicate by ``event_id``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pyarrow as pa
from blake3 import blake3
from pydantic import ValidationError

from aka_ledger._errors import SchemaError
from aka_ledger._model import EventModel, EventRegistry

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


@dataclass(frozen=True, slots=True)
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
    key = f"{writer_id}\x1f{seq}\x1f{run_id}\x1f{attempt_key or ''}\x1f{tag}\x1f{version}\x1f"
    return blake3((key + payload).encode()).hexdigest(length=16)


def now_us() -> int:
    """Microseconds since the epoch, UTC (the ``time`` column's unit)."""
    return int(datetime.now(UTC).timestamp() * 1_000_000)


def micros_to_datetime(us: int) -> datetime:
    """Inverse of :func:`now_us`, timezone-aware."""
    return datetime.fromtimestamp(us / 1_000_000, tz=_UTC)


@dataclass(slots=True)
class Columns:
    """Column buffers for a batch of rows being encoded."""

    event_id: list[str]
    run_id: list[str]
    attempt_key: list[str | None]
    writer_id: list[str]
    seq: list[int]
    time: list[int]
    type: list[str]
    version: list[int]
    payload: list[str]
    digests: list[tuple[str, ...]]

    @classmethod
    def empty(cls) -> Columns:
        return cls([], [], [], [], [], [], [], [], [], [])

    def to_batch(self) -> pa.RecordBatch:
        """One Arrow record batch of these rows, in :data:`SCHEMA`."""
        n = len(self.seq)
        writer = self.writer_id[0] if n else ""
        arrays = [
            pa.array(self.event_id, pa.string()),
            pa.array(self.run_id, pa.string()),
            pa.array(self.attempt_key, pa.string()),
            pa.array([writer] * n, pa.string())
            if self.writer_id.count(writer) == n
            else pa.array(self.writer_id, pa.string()),
            pa.array(self.seq, pa.int64()),
            pa.array(self.time, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            pa.array(self.type, pa.string()),
            pa.array(self.version, pa.int32()),
            pa.array(self.payload, pa.string()),
            pa.array(self.digests, pa.list_(pa.string())),
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=SCHEMA)


def encode(
    items: Sequence[tuple[EventModel, str, str | None]],
    *,
    writer_id: str,
    first_seq: int,
    time_us: int,
) -> tuple[Columns, list[Envelope]]:
    """Encode events into columns and envelopes; the only pydantic work on the hot path.

    Each payload is serialized once with ``model_dump_json``; digests are only looked
    for when the JSON contains a ``"b3:`` string, so plain events cost one dump and
    one hash.
    """
    cols = Columns.empty()
    envs: list[Envelope] = []
    when = micros_to_datetime(time_us)
    seq = first_seq
    for event, run_id, attempt_key in items:
        payload = event.model_dump_json()
        tag = event.type
        version = type(event).schema_version
        digests = event.digests() if '"b3:' in payload else ()
        eid = event_id(writer_id, seq, run_id, attempt_key, tag, version, payload)
        cols.event_id.append(eid)
        cols.run_id.append(run_id)
        cols.attempt_key.append(attempt_key)
        cols.writer_id.append(writer_id)
        cols.seq.append(seq)
        cols.time.append(time_us)
        cols.type.append(tag)
        cols.version.append(version)
        cols.payload.append(payload)
        cols.digests.append(digests)
        envs.append(
            Envelope(eid, run_id, attempt_key, writer_id, seq, when, tag, version, event, digests)
        )
        seq += 1
    return cols, envs


def empty_table() -> pa.Table:
    """A table of :data:`SCHEMA` with no rows."""
    return SCHEMA.empty_table()


def decode(table: pa.Table, registry: EventRegistry, sources: Sequence[str]) -> list[Envelope]:
    """Decode rows into envelopes, upcasting old payload versions.

    ``table`` must carry a ``_src`` column indexing ``sources`` so an undecodable row is
    reported with the file it came from.

    Raises:
        SchemaError: a row's type is not registered, its version is newer than the
            code, or its payload does not validate; the message names the file.
    """
    if table.num_rows == 0:
        return []
    c = {name: table.column(name).to_pylist() for name in (*COLUMNS, "_src")}
    models = registry.types()
    out: list[Envelope] = []
    append = out.append
    for i, tag in enumerate(c["type"]):
        version = c["version"][i]
        try:
            model = models.get(tag)
            if model is not None and version == model.schema_version:
                payload = model.model_validate_json(c["payload"][i])
            else:
                payload = registry.parse(tag, version, c["payload"][i])
        except SchemaError as exc:
            raise SchemaError(
                f"event {c['event_id'][i]} (seq {c['seq'][i]}): {exc.message}"
                + (" (written by a newer aka)" if "newer" in exc.message else ""),
                path=sources[c["_src"][i]],
                fix=exc.fix,
            ) from None
        except ValidationError as exc:
            raise SchemaError(
                f"event {c['event_id'][i]} of type {tag!r} does not validate: "
                f"{exc.errors()[0].get('msg', exc)}",
                path=sources[c["_src"][i]],
                fix="register the model this ledger was written with, or an upcaster",
            ) from None
        append(
            Envelope(
                c["event_id"][i],
                c["run_id"][i],
                c["attempt_key"][i],
                c["writer_id"][i],
                c["seq"][i],
                c["time"][i],
                tag,
                version,
                payload,
                tuple(c["digests"][i]),
            )
        )
    return out
