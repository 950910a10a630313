"""Reading stored rows back: Arrow rows of :data:`~aka_ledger._envelope.SCHEMA` to envelopes.

The read side of the envelope (:mod:`aka_ledger._envelope` writes it): payloads are
validated one ``(type, version)`` group at a time and upcast to the current model,
columns become Python values column by column, and a row that cannot be decoded is
reported with the file it came from. Kept apart from encoding because every replay
spends its time here, and its fast path and its slow, error-naming path are one concern.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime
from itertools import repeat
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import ValidationError

from aka_ledger._envelope import Envelope, micros_to_datetime
from aka_ledger._errors import SchemaError
from aka_ledger._model import EventModel, EventRegistry

_SLICE = 1 << 16  # rows of payload JSON turned into Python strings at a time
_new = object.__new__
_set = object.__setattr__


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
