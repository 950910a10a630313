"""Authority: which events only key holders may write, and the check every read makes.

Integrity (an ``event_id`` that hashes the record, a hash chain per writer) shows that a
record was not altered since it was written; it cannot show *who* wrote it, since anyone
who can write the directory can compute both. An application names the event types that
decide outcomes and gives a key per run (kept outside the ledger directory); for those
types the ``event_id`` is then BLAKE3 *keyed* with the run's key over the same record, a
MAC that only a holder of the key can produce. Readers recompute it and drop every event
of those types that fails, so a forged record is ignored by every read path and named by
``verify``. The ledger stays generic: it never knows what the types mean.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from blake3 import blake3

KEY_BYTES = 32


@dataclass(frozen=True)
class Authority:
    """The event types that need a run key, and where keys come from.

    Attributes:
        types: event types accepted only with a valid MAC under their run's key.
        key_for: the run's key (32 bytes), or None where this process has none: a run
            without a key (one recorded before keys existed, or read where its key is
            not present) cannot be checked and its events are taken as they are.
        sign: whether this process writes MACs (the orchestrator and evaluator do;
            a reader only checks).
        on_reject: called with each read's rejected events (for a warning).
    """

    types: frozenset[str]
    key_for: Callable[[str], bytes | None]
    sign: bool = False
    on_reject: Callable[[list[Rejected]], None] | None = field(default=None, compare=False)

    def signing_key(self, tag: str, run_id: str) -> bytes | None:
        """The key to MAC an event of type ``tag`` with, if this process signs it."""
        if not self.sign or tag not in self.types:
            return None
        return self.key_for(run_id)


@dataclass(frozen=True, slots=True)
class Rejected:
    """An event of an authority type whose MAC does not hold under its run's key."""

    event_id: str
    run_id: str
    writer_id: str
    seq: int
    type: str
    source: str


MAC_MARK = "k"


def mac_id(key: bytes, record: bytes) -> str:
    """The keyed ``event_id`` of a record (what :func:`event_id` is, with a key).

    It starts with ``k`` (never a hex digit), so a reader without keys can tell a MACed
    record from an altered one; the other 31 characters are the keyed hash.
    """
    return MAC_MARK + blake3(record, key=key).digest(16).hex()[1:]


def record_key(
    writer_id: str, seq: int, run_id: str, attempt_key: str | None, tag: str, version: int
) -> bytes:
    """The bytes before the payload in an event's identity (see ``event_id``)."""
    return f"{writer_id}\x1f{seq}\x1f{run_id}\x1f{attempt_key or ''}\x1f{tag}\x1f{version}\x1f".encode()


def check(
    table: pa.Table, authority: Authority, sources: Collection[str] | None = None
) -> tuple[pa.Table, list[Rejected]]:
    """``table`` without the rows that fail authority, and those rows.

    Only rows of the authority types whose run has a key here are checked; each must
    carry the keyed id. ``table`` may carry a ``_src`` column indexing ``sources``.
    """
    if table.num_rows == 0:
        return table, []
    wanted = pa.array(sorted(authority.types), pa.string())
    idx = pc.indices_nonzero(pc.is_in(table.column("type"), wanted)).to_pylist()
    if not idx:
        return table, []
    rows = table.take(pa.array(idx, pa.int64()))
    cols = {
        n: rows.column(n).to_pylist()
        for n in ("event_id", "writer_id", "seq", "run_id", "attempt_key", "type", "version")
    }
    payloads = rows.column("payload").to_pylist()
    src = rows.column("_src").to_pylist() if "_src" in rows.column_names else [0] * len(idx)
    names = list(sources or [])
    keys: dict[str, bytes | None] = {}
    bad: list[int] = []
    rejected: list[Rejected] = []
    for i, row in enumerate(idx):
        run = cols["run_id"][i]
        if run not in keys:
            keys[run] = authority.key_for(run)
        key = keys[run]
        if key is None:
            continue
        record = record_key(
            cols["writer_id"][i],
            cols["seq"][i],
            run,
            cols["attempt_key"][i],
            cols["type"][i],
            cols["version"][i],
        )
        if mac_id(key, record + payloads[i].encode()) != cols["event_id"][i]:
            bad.append(row)
            where = names[src[i]] if names and src[i] is not None and src[i] < len(names) else "?"
            rejected.append(
                Rejected(
                    cols["event_id"][i], run, cols["writer_id"][i], cols["seq"][i],
                    cols["type"][i], where,
                )
            )  # fmt: skip
    if not bad:
        return table, []
    keep = pc.invert(
        pc.is_in(pa.array(range(table.num_rows), pa.int64()), pa.array(bad, pa.int64()))
    )
    return table.filter(keep), rejected
