"""``aka bench ledger``: the ledger's throughput and latency on this machine.

Every number comes from the public API on a fresh directory: batched appends, durable
single appends, sealing, compaction, a full replay (read + decode + fold), a group-by
through DuckDB after compaction, and a large-blob put.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from aka_ledger._ledger import Ledger
from aka_ledger._model import EventModel, EventRegistry

BENCH_REGISTRY = EventRegistry()


@BENCH_REGISTRY.register
class BenchTicked(EventModel):
    """A synthetic event shaped like a typical arena event (a few small fields)."""

    type: Literal["BenchTicked"] = "BenchTicked"
    task: str
    """Which task."""
    step: int
    """Step number."""
    value: float
    """A measured value."""


def _items(n: int, start: int = 0) -> list[tuple[EventModel, str, str | None]]:
    return [
        (BenchTicked(task=f"t{i % 50}", step=i, value=i * 0.5), f"run-{i % 10}", f"a{i % 100}")
        for i in range(start, start + n)
    ]


def run_bench(
    events: int, *, directory: Path | None = None, batch: int = 10_000, blob_mb: int = 512
) -> dict[str, Any]:
    """Measure everything and return one flat dict of numbers (seconds, rates, counts)."""
    with tempfile.TemporaryDirectory(dir=directory, prefix="aka-bench-ledger-") as tmp:
        root = Path(tmp) / "ledger"
        out: dict[str, Any] = {
            "events": events,
            "batch": batch,
            "cpus": os.cpu_count(),
            "load_avg_1m_at_start": os.getloadavg()[0],  # other work on the machine
        }
        ledger = Ledger.open(root, registry=BENCH_REGISTRY, writer_id="bench", seal_rows=None)
        items = _items(events)  # model construction is the caller's cost, not the ledger's
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(0, events, batch):
            ledger.append_many(items[i : i + batch])
        ledger.sync()
        out["append_s"] = time.perf_counter() - t0
        out["append_cpu_s"] = time.process_time() - c0
        out["append_events_per_s"] = events / out["append_s"]
        out["append_events_per_cpu_s"] = events / out["append_cpu_s"]
        del items
        t0 = time.perf_counter()
        ledger.seal()
        out["seal_s"] = time.perf_counter() - t0
        out.update(_durable(ledger, Path(tmp)))
        ledger.close()
        out["files_before_compaction"] = _count(root / "events")
        _many_small_segments(root, writers=20, per_writer=5, rows=200)
        out["files_with_small_segments"] = _count(root / "events")
        reader = Ledger.open(root, registry=BENCH_REGISTRY, create=False)
        t0 = time.perf_counter()
        result = reader.compact()
        out["compact_s"] = time.perf_counter() - t0
        out["compacted_rows"] = result.rows
        out["files_after_compaction"] = _count(root / "events")
        t0 = time.perf_counter()
        reader.table()  # the Arrow part alone: read, order, deduplicate
        out["replay_read_rows_s"] = time.perf_counter() - t0
        t0, c0 = time.perf_counter(), time.process_time()
        state: dict[str, float] = {}
        replayed = 0
        for env in reader.iter_events():  # decoded a batch at a time, folded as it comes
            replayed += 1
            p = env.payload
            if isinstance(p, BenchTicked):
                state[p.task] = state.get(p.task, 0.0) + p.value
        out["replay_s"] = time.perf_counter() - t0
        out["replay_cpu_s"] = time.process_time() - c0
        out["replayed_events"] = replayed
        t0, c0 = time.perf_counter(), time.process_time()
        everything = reader.events()  # the same events as one list
        out["replay_list_s"] = time.perf_counter() - t0
        out["replay_list_cpu_s"] = time.process_time() - c0
        del everything
        con = reader.connect()
        t0 = time.perf_counter()
        con.sql("SELECT run_id, type, count(*) FROM events GROUP BY ALL").fetchall()
        out["query_s"] = time.perf_counter() - t0
        out.update(_cas_put(reader, Path(tmp), blob_mb))
        out["cas_files"] = _count(root / "cas")
    return out


def _durable(ledger: Ledger, tmp: Path, n: int = 500) -> dict[str, float]:
    """Single appends with and without fsync, next to a bare fsync of this disk.

    The durable latency is what an intent/result boundary costs; the non-durable one
    and the bare fsync show how much of it is the ledger and how much the disk.
    """

    def p50(values: list[float]) -> float:
        return statistics.median(values)

    durable, plain, bare = [], [], []
    os.sync()  # measure steady state, not the writeback of the bulk append just before
    for event, run_id, attempt in _items(n):
        t0 = time.perf_counter()
        ledger.append(event, run_id=run_id, attempt_key=attempt, durable=True)
        durable.append((time.perf_counter() - t0) * 1000)
    for event, run_id, attempt in _items(n):
        t0 = time.perf_counter()
        ledger.append(event, run_id=run_id, attempt_key=attempt)
        plain.append((time.perf_counter() - t0) * 1000)
    fd = os.open(tmp / "fsync.bin", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for _ in range(n):
            os.write(fd, b"x" * 512)
            t0 = time.perf_counter()
            os.fsync(fd)
            bare.append((time.perf_counter() - t0) * 1000)
    finally:
        os.close(fd)
    durable.sort()
    return {
        "durable_append_p50_ms": p50(durable),
        "durable_append_p99_ms": durable[int(0.99 * (len(durable) - 1))],
        "append_one_p50_ms": p50(plain),
        "bare_fsync_p50_ms": p50(bare),
    }


def _many_small_segments(root: Path, *, writers: int, per_writer: int, rows: int) -> None:
    """Short-lived writers sealing small segments: the file count compaction exists for."""
    for w in range(writers):
        ledger = Ledger.open(root, registry=BENCH_REGISTRY, writer_id=f"small-{w}")
        for s in range(per_writer):
            ledger.append_many(_items(rows, s * rows))
            ledger.seal()
        ledger.close()


def _cas_put(ledger: Ledger, tmp: Path, blob_mb: int) -> dict[str, float]:
    """Put one large file (new, then again), next to the disk's own write+fsync rate."""
    src = tmp / "blob.bin"
    chunk = os.urandom(1 << 20)
    with open(src, "wb") as fh:
        for _ in range(blob_mb):
            fh.write(chunk)
    gb = blob_mb / 1024
    t0 = time.perf_counter()
    ledger.cas.put(src)
    new_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ledger.cas.put(src)
    again_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    with open(tmp / "disk.bin", "wb") as fh:
        for _ in range(blob_mb):
            fh.write(chunk)
        fh.flush()
        os.fsync(fh.fileno())
    disk_s = time.perf_counter() - t0
    return {
        "cas_put_gb_per_s": gb / new_s,
        "cas_put_existing_gb_per_s": gb / again_s,
        "disk_write_fsync_gb_per_s": gb / disk_s,
        "cas_put_mb": blob_mb,
    }


def _count(path: Path) -> int:
    return sum(1 for p in path.rglob("*") if p.is_file())
