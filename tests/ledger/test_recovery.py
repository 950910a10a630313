"""Torn live logs, orphaned writers, compaction and reopening continue one history."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from ledger_vocab import REGISTRY, Counted

from aka_ledger import Ledger
from aka_ledger._segments import LiveLog, read_live


def _live_logs(root: Path) -> list[Path]:
    return sorted((root / "events").glob("*/live-*.arrows"))


def _abandon(ledger: Ledger) -> None:
    """Drop a writer without sealing, as if its process had died (the flock goes too)."""
    writer = ledger._store._writer
    writer.live.close()


@given(sizes=st.lists(st.integers(1, 20), min_size=1, max_size=6), cut=st.floats(0, 1))
@settings(max_examples=30, deadline=None)
def test_a_torn_live_log_keeps_every_complete_batch(
    tmp_path_factory: object, sizes: list[int], cut: float
) -> None:
    root = tmp_path_factory.mktemp("l")  # type: ignore[attr-defined]
    ledger = Ledger.open(root, registry=REGISTRY, writer_id="w", seal_rows=None)
    for i, n in enumerate(sizes):
        ledger.append_many([(Counted(key=f"{i}", by=j), "r", None) for j in range(n)])
    _abandon(ledger)
    [log] = _live_logs(root)
    data = log.read_bytes()
    assert [b.num_rows for b in read_live(log).batches] == sizes
    os.truncate(log, int(cut * len(data)))
    scan = read_live(log)
    survivors, end = scan.batches, scan.end
    assert end <= int(cut * len(data))
    assert not scan.damaged and scan.torn == (end < int(cut * len(data)))
    kept = sum(b.num_rows for b in survivors)
    assert [b.num_rows for b in survivors] == sizes[: len(survivors)]
    reopened = Ledger.open(root, registry=REGISTRY, writer_id="w")
    events = reopened.events()
    assert [e.seq for e in events] == list(range(kept))
    env = reopened.append(Counted(key="next", by=0), run_id="r", durable=True)
    assert env.seq == kept
    assert reopened.verify() == []
    reopened.close()


def test_an_orphaned_live_log_is_readable_and_sealed_by_compaction(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    dead = Ledger.open(root, registry=REGISTRY, writer_id="dead", seal_rows=5)
    dead.append_many([(Counted(key="a", by=i), "r", None) for i in range(7)])
    dead.append(Counted(key="a", by=7), run_id="r", durable=True)
    _abandon(dead)
    reader = Ledger.open(root, registry=REGISTRY)
    assert [e.seq for e in reader.events()] == list(range(8)), "orphan's live log is read"
    result = reader.compact()
    assert result.sealed_orphans == 1
    assert _live_logs(root) == []
    assert [e.seq for e in reader.events()] == list(range(8))
    assert reader.verify() == []
    back = Ledger.open(root, registry=REGISTRY, writer_id="dead")
    assert back.append(Counted(key="b", by=0), run_id="r").seq == 8
    back.close()
    assert [e.seq for e in reader.events() if e.writer_id == "dead"] == list(range(9))
    assert reader.verify() == []


def test_a_live_writer_is_not_sealed_under_it(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    alive = Ledger.open(root, registry=REGISTRY, writer_id="alive")
    alive.append(Counted(key="a", by=1), run_id="r", durable=True)
    other = Ledger.open(root, registry=REGISTRY)
    assert other.compact().sealed_orphans == 0
    assert len(_live_logs(root)) == 1
    alive.append(Counted(key="a", by=2), run_id="r", durable=True)
    assert [e.seq for e in other.events()] == [0, 1]
    alive.close()


def test_compaction_merges_and_reopen_continues_the_chain(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    for round_ in range(3):
        for w in range(4):
            led = Ledger.open(root, registry=REGISTRY, writer_id=f"w{w}", seal_rows=3)
            led.append_many([(Counted(key=f"{round_}", by=i), "r", None) for i in range(7)])
            led.close()
        before = Ledger.open(root, registry=REGISTRY).events()
        result = Ledger.open(root, registry=REGISTRY).compact(target_rows=40)
        assert result.manifest == round_ + 1
        after = Ledger.open(root, registry=REGISTRY)
        assert after.events() == before
        assert after.verify() == []
    segments = list((root / "events").glob("w*/*.parquet"))
    assert segments == [], "superseded writer segments are removed after the commit"


def test_a_second_process_cannot_take_a_live_writer_id(tmp_path: Path) -> None:
    import pytest

    from aka_ledger import LedgerError

    root = tmp_path / "ledger"
    first = Ledger.open(root, registry=REGISTRY, writer_id="same")
    first.append(Counted(key="a", by=1), run_id="r")
    with pytest.raises(LedgerError, match="locked by another process"):
        Ledger.open(root, registry=REGISTRY, writer_id="same")
    first.close()


def test_live_log_lock_is_released_on_close(tmp_path: Path) -> None:
    path = tmp_path / "live-000000000000.arrows"
    log = LiveLog(path, 0, new=True)
    log.close()
    again = LiveLog(path, 0, new=False)
    again.close()


def test_compaction_removes_only_stale_temp_files(tmp_path: Path) -> None:
    import time

    root = tmp_path / "ledger"
    led = Ledger.open(root, registry=REGISTRY, writer_id="w")
    led.append(Counted(key="a", by=1), run_id="r")
    led.close()
    (root / "cas" / "tmp").mkdir(exist_ok=True)
    old = root / "cas" / "tmp" / ".tmp-gone-1"
    fresh = root / "events" / "w" / ".tmp-w-2"
    for p in (old, fresh):
        p.write_bytes(b"partial")
    hours_ago = time.time() - 2 * 3600
    os.utime(old, (hours_ago, hours_ago))
    Ledger.open(root, registry=REGISTRY).compact()
    assert not old.exists() and fresh.exists()


def test_verify_reports_a_content_store_temp_only_once_no_put_could_own_it(tmp_path: Path) -> None:
    """A put holds no lock: a young temp may be a live put (or a killed one that the next
    compaction clears once stale), so verify names only those as old as compaction's cutoff."""
    import time

    root = tmp_path / "ledger"
    led = Ledger.open(root, registry=REGISTRY, writer_id="w")
    led.append(Counted(key="a", by=1), run_id="r")
    led.close()
    (root / "cas" / "tmp").mkdir(exist_ok=True)
    young = root / "cas" / "tmp" / ".tmp-cas-young"
    old = root / "cas" / "tmp" / ".tmp-cas-old"
    for p in (young, old):
        p.write_bytes(b"partial")
    hours_ago = time.time() - 2 * 3600
    os.utime(old, (hours_ago, hours_ago))
    found = [str(p.path) for p in Ledger.open(root, registry=REGISTRY).verify()]
    assert any(".tmp-cas-old" in f for f in found) and not any(".tmp-cas-young" in f for f in found)
