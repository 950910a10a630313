"""Many writer processes, one directory, a compaction running meanwhile: nothing lost."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from ledger_vocab import REGISTRY

from aka_ledger import Ledger

WRITERS = 8
EVENTS_EACH = 10_000


def _per_writer_seqs(ledger: Ledger) -> dict[str, list[int]]:
    table, _ = ledger.table()
    seqs: dict[str, list[int]] = defaultdict(list)
    for w, s in zip(
        table.column("writer_id").to_pylist(), table.column("seq").to_pylist(), strict=True
    ):
        seqs[w].append(s)
    return seqs


def test_eight_writers_and_a_compaction_give_every_event_once(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    Ledger.open(root, registry=REGISTRY).close()
    here = Path(__file__).parent
    hold = tmp_path / "compacted"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys, ledger_workers; ledger_workers.steady_writer("
                "sys.argv[1], sys.argv[2], int(sys.argv[3]), 7, sys.argv[4])",
                str(root),
                f"w{i}",
                str(EVENTS_EACH),
                str(hold),
            ],
            cwd=here,
            env={**os.environ, "PYTHONPATH": str(here)},
        )
        for i in range(WRITERS)
    ]
    reader = Ledger.open(root, registry=REGISTRY)
    compactions = reads = 0
    while any(p.poll() is None for p in procs):
        result = reader.compact(target_rows=20_000)
        if result.manifest is not None:
            # the writers wait halfway for this: the rest of their appends follow it
            compactions += any(p.poll() is None for p in procs)
            hold.touch()
        for writer, seqs in _per_writer_seqs(reader).items():
            assert sorted(seqs) == list(range(len(seqs))), f"{writer}: a read saw a hole"
        reads += 1
        time.sleep(0.01)
    assert [p.wait() for p in procs] == [0] * WRITERS
    assert compactions >= 1, "no compaction overlapped the writers"
    reader.compact(target_rows=20_000)
    events = reader.events()
    assert len(events) == WRITERS * EVENTS_EACH
    assert len({e.event_id for e in events}) == WRITERS * EVENTS_EACH
    final = _per_writer_seqs(reader)
    assert sorted(final) == [f"w{i}" for i in range(WRITERS)]
    for writer, got in final.items():
        assert sorted(got) == list(range(EVENTS_EACH)), f"{writer}: sequence gap"
    assert reader.verify() == []
    assert reads >= 1
    reader.close()
