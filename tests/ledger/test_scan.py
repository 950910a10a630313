"""Properties of the read path's vectorized helpers: ordering, dedup, gap detection."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from aka_ledger._scan import _is_sorted, dedup_sort, has_gap

ROWS = st.lists(
    st.tuples(
        st.integers(0, 3), st.sampled_from(["a", "b"]), st.integers(0, 3), st.sampled_from("xyz")
    ),
    max_size=12,
)


def _table(rows: list[tuple[int, str, int, str]]) -> pa.Table:
    cols = list(zip(*rows, strict=True)) if rows else [(), (), (), ()]
    return pa.table(
        {
            "time": pa.array(cols[0], pa.int64()),
            "writer_id": pa.array(cols[1], pa.string()),
            "seq": pa.array(cols[2], pa.int64()),
            "event_id": pa.array(cols[3], pa.string()),
            "_src": pa.array([0] * len(rows), pa.int32()),
        }
    )


def _rows(table: pa.Table) -> list[tuple[int, str, int, str]]:
    names = ("time", "writer_id", "seq", "event_id")
    return list(zip(*(table.column(n).to_pylist() for n in names), strict=True))


@given(ROWS)
def test_sortedness_check_agrees_with_python(rows: list[tuple[int, str, int, str]]) -> None:
    assert _is_sorted(_table(rows)) == (rows == sorted(rows))


@given(ROWS)
def test_dedup_sort_orders_and_keeps_each_copy_once(
    rows: list[tuple[int, str, int, str]],
) -> None:
    # a copy of a record repeats all of it; give each event id one identity
    identity = {r[3]: r for r in rows}
    copies = [identity[r[3]] for r in rows]
    out = _rows(
        dedup_sort([_table(copies[: len(copies) // 2]), _table(copies[len(copies) // 2 :])])
    )
    assert out == sorted(set(copies))


@given(
    st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 20), st.integers(0, 5)), max_size=8)
)
def test_gap_detection(spans: list[tuple[str, int, int]]) -> None:
    ranges = [(w, first, first + length) for w, first, length in spans]
    covered: dict[str, set[int]] = {}
    for w, first, last in ranges:
        covered.setdefault(w, set()).update(range(first, last + 1))
    expected = any(seqs != set(range(max(seqs) + 1)) for seqs in covered.values())
    assert has_gap(list(ranges)) == expected
