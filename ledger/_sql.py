"""The DuckDB read side; the only module that imports duckdb (lazily, via ``connect``).

The evaluation worker appends events but never queries, and its image lacks duckdb,
so nothing on the write path imports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

    from aka_ledger._ledger import Ledger

EVENTS_VIEW = """
CREATE VIEW events AS
SELECT event_id, run_id, attempt_key, writer_id, seq, time, type, version,
       payload::JSON AS payload, digests
FROM _events_arrow
"""


def connect(ledger: Ledger) -> duckdb.DuckDBPyConnection:
    """An in-process DuckDB with an ``events`` view over a snapshot of every event.

    The snapshot is deduplicated and includes live logs, so a running run is visible;
    it is immune to files vanishing under a later compaction. Connect again to see
    newer events.
    """
    import duckdb

    table, _ = ledger.table()
    con = duckdb.connect()
    con.register("_events_arrow", table.drop_columns(["_src"]))
    con.execute(EVENTS_VIEW)
    return con
