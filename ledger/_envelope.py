"""The generic envelope around every event, and its columnar (Arrow) form.

Events are stored as rows of :data:`SCHEMA`; the payload is the model's JSON, written
once at append time. The ``event_id`` is a BLAKE3 hash of everything that identifies a
record (writer, sequence number, run, attempt, type, version, payload), so re-reading a
file twice, a live log next to the segment it was sealed into, or a compacted copy
all collapse to one event when readers deduplicate by ``event_id``.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import repeat
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc
from blake3 import blake3
from pydantic import ValidationError

from aka_ledger._authority import mac_id, record_key
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


def _envelope(fields: dict[str, Any]) -> Envelope:
    """Build an envelope without the frozen ``__init__``'s ten ``object.__setattr__`` calls.

    Millions of envelopes are built per replay; filling ``__dict__`` at once is several
    times faster and yields an identical (equal, frozen) object.
    """
    env = _new(Envelope)
    _set(env, "__dict__", fields)
    return env


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
_SLICE = 1 << 16  # rows of payload JSON turned into Python strings at a time
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


def decode(table: pa.Table, registry: EventRegistry, sources: Sequence[str]) -> list[Envelope]:
    """Decode rows into envelopes, upcasting old payload versions.

    ``table`` must carry a ``_src`` column indexing ``sources`` so an undecodable row is
    reported with the file it came from.

    Columns become Python values column by column (repeated values share one object),
    and the payloads of each ``(type, version)`` are validated together; any row that
    cannot be decoded that way sends the whole table through :func:`_decode_rows`,
    which raises the error for the first bad row.

    Raises:
        SchemaError: a row's type is not registered, its version is newer than the
            code, or its payload does not validate; the message names the file.
    """
    n = table.num_rows
    if n == 0:
        return []
    payloads = _payloads(table, registry)
    if payloads is None:
        return _decode_rows(table, registry, sources)
    ids = table.column("event_id").to_pylist()
    seqs = table.column("seq").to_pylist()
    runs = _repeated(table.column("run_id"))
    attempts = _repeated(table.column("attempt_key"))
    writers = _repeated(table.column("writer_id"))
    types = _repeated(table.column("type"))
    versions = _repeated(table.column("version"))
    times = _datetimes(table.column("time"))
    digests = _digest_tuples(table.column("digests"))
    dicts = [
        {"event_id": i, "run_id": r, "attempt_key": a, "writer_id": w, "seq": s, "time": t,
         "type": ty, "version": v, "payload": p, "digests": d}
        for i, r, a, w, s, t, ty, v, p, d in zip(
            ids, runs, attempts, writers, seqs, times, types, versions, payloads, digests,
            strict=True,
        )
    ]  # fmt: skip
    envs = list(map(_new, repeat(Envelope, n)))
    deque(map(_set, envs, repeat("__dict__"), dicts), maxlen=0)
    return envs


def _payloads(table: pa.Table, registry: EventRegistry) -> list[EventModel] | None:
    """Every row's payload model in row order, validated one ``(type, version)`` at a time.

    Returns ``None`` if some row cannot be decoded (unknown type, newer version, invalid
    payload, failing upcaster), so the caller can report the first such row.
    """
    keys = pc.binary_join_element_wise(
        table.column("type"), pc.cast(table.column("version"), pa.string()), "\x1f"
    )
    if keys.null_count:
        return None
    encoded = pc.dictionary_encode(keys.combine_chunks())
    groups = encoded.dictionary.to_pylist()
    raw = table.column("payload")
    if len(groups) == 1:
        return _validate_group(groups[0], raw, registry)
    order = pc.sort_indices(encoded.indices)  # stable: rows of one group stay in order
    sorted_raw = raw.take(order)
    counts = pc.value_counts(encoded.indices)
    flat: list[EventModel] = []
    start = 0
    for group, count in sorted(
        zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True)
    ):
        models = _validate_group(groups[group], sorted_raw.slice(start, count), registry)
        if models is None:
            return None
        flat += models
        start += count
    inverse = pc.sort_indices(order).to_pylist()  # row -> position in `flat`
    return list(map(flat.__getitem__, inverse))


def _validate_group(
    key: str, raw: pa.Array | pa.ChunkedArray, registry: EventRegistry
) -> list[EventModel] | None:
    """Validate one group's payloads, a slice at a time.

    Slicing keeps the JSON strings short-lived: each slice's strings are freed before
    the next slice's models are allocated, so the models reuse their memory.
    """
    tag, _, v = key.rpartition("\x1f")
    version = int(v)
    model = registry.types().get(tag)
    if model is None or version > model.schema_version:
        return None
    out: list[EventModel] = []
    try:
        for start in range(0, len(raw), _SLICE):
            part = raw.slice(start, _SLICE).to_pylist()
            if version == model.schema_version:
                out += map(model.__pydantic_validator__.validate_json, part)
            else:  # upcast, step by step
                out += [registry.parse(tag, version, r) for r in part]
    except Exception:  # the per-row decode reports (or raises) it for the first bad row
        return None
    return out


def _decode_rows(
    table: pa.Table, registry: EventRegistry, sources: Sequence[str]
) -> list[Envelope]:
    """Decode row by row, raising for the first row that does not decode."""
    c = {name: table.column(name).to_pylist() for name in ("event_id", "seq", "payload")}
    for name in ("run_id", "attempt_key", "writer_id", "type", "version"):
        c[name] = _repeated(table.column(name))
    times = _datetimes(table.column("time"))
    digests = _digest_tuples(table.column("digests"))
    fast = {
        (tag, m.schema_version): m.__pydantic_validator__.validate_json
        for tag, m in registry.types().items()
    }
    out: list[Envelope] = []
    push = out.append
    rows = zip(
        c["event_id"], c["run_id"], c["attempt_key"], c["writer_id"], c["seq"], times,
        c["type"], c["version"], c["payload"], digests, strict=True,
    )  # fmt: skip
    for i, (eid, r, a, w, s, t, ty, v, raw, d) in enumerate(rows):
        try:
            validate = fast.get((ty, v))
            p = validate(raw) if validate is not None else registry.parse(ty, v, raw)
        except (SchemaError, ValidationError) as exc:
            raise _decode_error(exc, table, i, ty, sources) from None
        env = _new(Envelope)
        _set(env, "__dict__", {"event_id": eid, "run_id": r, "attempt_key": a, "writer_id": w,
                               "seq": s, "time": t, "type": ty, "version": v, "payload": p,
                               "digests": d})  # fmt: skip
        push(env)
    return out


def _repeated(column: pa.ChunkedArray, convert: Callable[[Any], Any] | None = None) -> list[Any]:
    """Python values of a low-cardinality column, one object per distinct value.

    Long runs of one value (a writer's rows, a batch's time) are expanded run by run;
    otherwise the distinct values are looked up by their dictionary index. ``convert``
    turns each distinct value into the object returned for it.
    """
    array = column.combine_chunks()
    n = len(array)
    runs = pc.run_end_encode(array)
    if len(runs.values) <= n // 16:
        values = runs.values.to_pylist()
        if convert is not None:
            values = list(map(convert, values))
        out: list[Any] = []
        start = 0
        for value, end in zip(values, runs.run_ends.to_pylist(), strict=True):
            out += [value] * (end - start)
            start = end
        return out
    encoded = pc.dictionary_encode(array, null_encoding="encode")
    if len(encoded.dictionary) > n // 4:
        values = array.to_pylist()
        if convert is None:
            return values
        cache = {v: convert(v) for v in set(values)}
        return list(map(cache.__getitem__, values))
    values = encoded.dictionary.to_pylist()
    if convert is not None:
        values = list(map(convert, values))
    return list(map(values.__getitem__, encoded.indices.to_pylist()))


def _digest_tuples(column: pa.ChunkedArray) -> list[tuple[str, ...]]:
    """Digest lists as tuples; most events reference none, which costs nothing here."""
    if pc.sum(pc.list_value_length(column)).as_py() in (0, None):
        return [()] * len(column)
    return [tuple(d) for d in column.to_pylist()]


def _datetimes(column: pa.ChunkedArray) -> list[datetime]:
    """Timestamps as aware datetimes; batches share a time, so convert each value once."""
    return _repeated(column.cast(pa.int64()), micros_to_datetime)


def _decode_error(
    exc: Exception, table: pa.Table, i: int, tag: str, sources: Sequence[str]
) -> SchemaError:
    eid = table.column("event_id")[i].as_py()
    path = sources[table.column("_src")[i].as_py()]
    if isinstance(exc, SchemaError):
        newer = " (written by a newer aka)" if "newer" in exc.message else ""
        return SchemaError(f"event {eid}: {exc.message}{newer}", path=path, fix=exc.fix)
    assert isinstance(exc, ValidationError)
    return SchemaError(
        f"event {eid} of type {tag!r} does not validate: {exc.errors()[0].get('msg', exc)}",
        path=path,
        fix="register the model this ledger was written with, or an upcaster",
    )
