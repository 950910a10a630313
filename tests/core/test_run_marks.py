"""A run's start records every writer's high-water mark: deleting an earlier run shows."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from arena_helpers import write_config

from aka import events as ev
from aka.events import REGISTRY
from aka_ledger import Ledger
from aka_ledger._fs import Unit, chain_hash
from aka_ledger._segments import read_segment, write_segment


def _aka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aka.cli", *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("marks")
    tasks = base / "tasks"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "tasks", tasks)
    cfg = write_config(base, tasks)
    for run_id in ("one", "two"):
        done = _aka("run", str(cfg), "--ledger", str(base / "ledger"), "--run-id", run_id)
        assert done.returncode == 0, done.stderr
    return base / "ledger"


def _writers_of(ledger_dir: Path) -> dict[str, str]:
    """Run id -> the writer that recorded its RunStarted."""
    with Ledger.open(ledger_dir, registry=REGISTRY, create=False) as led:
        return {e.run_id: e.writer_id for e in led.events(types={"RunStarted"})}


def test_the_second_run_records_the_first_runs_writer(two_runs: Path) -> None:
    with Ledger.open(two_runs, registry=REGISTRY, create=False) as led:
        [second] = led.events(run_id="two", types={"RunStarted"})
        first = led.marks()
    assert isinstance(second.payload, ev.RunStarted)
    one = _writers_of(two_runs)["one"]
    assert second.payload.writers[one][0] == first[one].last
    assert _aka("ledger", "verify", "--ledger", str(two_runs)).returncode == 0


def test_deleting_the_first_run_is_reported(two_runs: Path, tmp_path: Path) -> None:
    copy = tmp_path / "ledger"
    shutil.copytree(two_runs, copy)
    one = _writers_of(copy)["one"]
    shutil.rmtree(copy / "events" / one)
    done = _aka("ledger", "verify", "--ledger", str(copy))
    assert done.returncode == 1
    assert f"writer {one} is missing: run two's RunStarted recorded" in done.stdout


def test_deleting_the_first_runs_last_segment_is_reported(two_runs: Path, tmp_path: Path) -> None:
    copy = tmp_path / "ledger"
    shutil.copytree(two_runs, copy)
    one = _writers_of(copy)["one"]
    segments = sorted((copy / "events" / one).glob("*.parquet"))
    last = segments[-1]
    with Ledger.open(copy, registry=REGISTRY, create=False) as led:
        n = len(led.events())
    if len(segments) == 1:  # one segment: cut it to its first half of events
        table, [unit] = read_segment(last)
        keep = table.sort_by("seq").slice(0, table.num_rows // 2)
        ids = keep.column("event_id").to_pylist()
        end = unit.first + len(ids) - 1
        cut = Unit(unit.writer, unit.first, end, unit.prev, chain_hash(unit.prev, ids))
        last.unlink()
        write_segment(last.with_name(f"{unit.first:012d}-{end:012d}.parquet"), keep, [cut], tag="t")
        assert pq.read_table(last.with_name(f"{unit.first:012d}-{end:012d}.parquet")).num_rows
    else:
        last.unlink()
    with Ledger.open(copy, registry=REGISTRY, create=False) as led:
        assert len(led.events()) < n and led.verify() == []  # self-consistent without marks
    done = _aka("ledger", "verify", "--ledger", str(copy))
    assert done.returncode == 1
    assert f"writer {one} ends at seq" in done.stdout and "a deleted tail" in done.stdout
