"""Encoding and decoding rows: the batch paths agree with the plain per-row definitions.

``decode`` validates the payloads of each ``(type, version)`` together and builds the
envelopes column by column; ``_decode_rows`` is the plain per-row loop it falls back to
when a row does not decode. They must give equal envelopes in the same order, upcast
old versions the same way, and raise the same error naming the file.
"""

from __future__ import annotations

from typing import Any, Literal

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ledger_vocab import EVENTS, REGISTRY, Counted, Opened, Renamed

from aka_ledger import EventModel, Ledger, SchemaError
from aka_ledger._decode import _decode_rows, _payloads, decode
from aka_ledger._envelope import encode, event_id


class RenamedV1(EventModel):
    """``Renamed`` as schema version 1 wrote it (upcast on read by the vocabulary)."""

    schema_version = 1
    type: Literal["Renamed"] = "Renamed"
    old: str


OLD_OR_NEW = st.one_of(EVENTS, st.builds(RenamedV1, old=st.text(max_size=10)))


def _table(items: list[tuple[EventModel, str, str | None]], batch: int = 3) -> pa.Table:
    ledger = Ledger.memory(registry=REGISTRY, writer_id="w0")
    for i in range(0, len(items), batch):
        ledger.append_many(items[i : i + batch])
    table, _ = ledger.table()
    return table


def _with_payload(table: pa.Table, row: int, payload: str) -> pa.Table:
    values = table.column("payload").to_pylist()
    values[row] = payload
    i = table.schema.get_field_index("payload")
    return table.set_column(i, "payload", pa.array(values, pa.string()))


@given(
    events=st.lists(OLD_OR_NEW, max_size=30),
    runs=st.lists(st.sampled_from(["r1", "r2"]), min_size=30, max_size=30),
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_grouped_decode_equals_row_by_row_decode(events: list[Any], runs: list[str]) -> None:
    pairs = zip(events, runs[: len(events)], strict=True)
    items = [(e, r, None if i % 3 else f"a{i}") for i, (e, r) in enumerate(pairs)]
    table = _table(items)
    assert not items or _payloads(table, REGISTRY) is not None  # no fallback taken
    fast = decode(table, REGISTRY, ["src"])
    assert fast == _decode_rows(table, REGISTRY, ["src"])
    assert [e.seq for e in fast] == list(range(len(items)))
    for env, (event, run, attempt) in zip(fast, items, strict=True):
        assert (env.run_id, env.attempt_key, env.version) == (run, attempt, event.schema_version)
        if isinstance(event, RenamedV1):
            assert env.payload == Renamed(previous=event.old, name=event.old)
        else:
            assert env.payload == event


def test_old_and_current_versions_interleaved_keep_their_order() -> None:
    items: list[tuple[EventModel, str, str | None]] = [
        (Opened(name="o"), "r", None),
        (RenamedV1(old="a"), "r", None),
        (Renamed(previous="x", name="y"), "r", None),
        (Counted(key="k", by=1), "r", None),
        (RenamedV1(old="b"), "r", None),
    ]
    envs = decode(_table(items, batch=2), REGISTRY, ["src"])
    assert [e.payload for e in envs] == [
        Opened(name="o"),
        Renamed(previous="a", name="a"),
        Renamed(previous="x", name="y"),
        Counted(key="k", by=1),
        Renamed(previous="b", name="b"),
    ]
    assert [e.version for e in envs] == [1, 1, 2, 1, 1]


@pytest.mark.parametrize(
    ("row", "payload", "message"),
    [
        (7, '{"type":"Counted","key":"k","by":"x"}', "type 'Counted' does not validate"),
        (4, '{"type":"Renamed","old":5}', "type 'Renamed' does not validate"),
        (5, "not json", "does not validate"),
    ],
)
def test_the_first_bad_payload_is_named_with_its_file(row: int, payload: str, message: str) -> None:
    items: list[tuple[EventModel, str, str | None]] = [
        (Counted(key="k", by=i) if i % 2 else RenamedV1(old=str(i)), "r", None) for i in range(10)
    ]
    table = _with_payload(_table(items), row, payload)
    bad_id = table.column("event_id")[row].as_py()
    with pytest.raises(SchemaError) as fast:
        decode(table, REGISTRY, ["events/w0/segment.parquet"])
    with pytest.raises(SchemaError) as slow:
        _decode_rows(table, REGISTRY, ["events/w0/segment.parquet"])
    assert str(fast.value) == str(slow.value)
    assert message in str(fast.value)
    assert bad_id in str(fast.value)
    assert "events/w0/segment.parquet" in str(fast.value)


def test_the_first_of_two_bad_rows_is_the_one_named() -> None:
    items: list[tuple[EventModel, str, str | None]] = [
        (Counted(key="k", by=i) if i % 2 else Opened(name=str(i)), "r", None) for i in range(10)
    ]
    table = _with_payload(_table(items), 8, "{}")  # an Opened row, after...
    table = _with_payload(table, 3, "{}")  # ...a Counted row
    with pytest.raises(SchemaError) as err:
        decode(table, REGISTRY, ["src"])
    assert table.column("event_id")[3].as_py() in str(err.value)
    assert "'Counted'" in str(err.value)


@given(
    events=st.lists(EVENTS, min_size=1, max_size=10),
    run=st.text(min_size=1, max_size=8),
    attempt=st.none() | st.text(max_size=8),
    writer=st.sampled_from(["w0", "host-1-éa"]),
)
@settings(max_examples=40, deadline=None)
def test_encoded_ids_are_the_record_hashes(
    events: list[EventModel], run: str, attempt: str | None, writer: str
) -> None:
    """The batch encoder's ids (one reused hasher) equal :func:`event_id` of each row."""
    batch, envs = encode(
        [(e, run, attempt) for e in events], writer_id=writer, first_seq=7, time_us=1
    )
    rows = batch.to_pylist()
    for row, env in zip(rows, envs, strict=True):
        expect = event_id(
            writer, row["seq"], run, attempt, row["type"], row["version"], row["payload"]
        )
        assert row["event_id"] == env.event_id == expect
