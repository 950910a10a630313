"""What verify sees: every manifest field, compacted bytes, leftover temps, blobs in trees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from ledger_vocab import REGISTRY, Counted, Stored

from aka_ledger import CorruptError, Ledger


def _compacted(root: Path) -> tuple[Path, Path]:
    for wid in ("a", "b"):
        with Ledger.open(root, registry=REGISTRY, writer_id=wid) as led:
            led.append_many([(Counted(key=wid, by=i), "r", None) for i in range(4)])
    with Ledger.open(root, registry=REGISTRY) as led:
        assert led.compact().manifest == 1
        assert led.verify() == []
    [manifest] = (root / "events" / "_manifests").glob("*.json")
    [segment] = (root / "events" / "_compacted").glob("*.parquet")
    return manifest, segment


def _rows(doc: dict[str, Any]) -> None:
    doc["segments"][0]["rows"] += 1


def _writer(doc: dict[str, Any]) -> None:
    doc["segments"][0]["units"][0][0] = "z"


def _first(doc: dict[str, Any]) -> None:
    doc["segments"][0]["units"][1][1] += 1


def _last(doc: dict[str, Any]) -> None:
    doc["segments"][0]["units"][0][2] -= 1


def _chain(doc: dict[str, Any]) -> None:
    unit = doc["segments"][0]["units"][0]
    unit[4] = unit[4][::-1]


def _digest(doc: dict[str, Any]) -> None:
    doc["segments"][0]["b3"] = "0" * 64


def _mark(doc: dict[str, Any]) -> None:
    doc["marks"][0][1] -= 1  # a writer's high-water mark lowered


@pytest.mark.parametrize("edit", [_rows, _writer, _first, _last, _chain, _digest, _mark])
def test_every_manifest_field_is_covered_by_its_checksum(tmp_path: Path, edit: Any) -> None:
    manifest, _ = _compacted(tmp_path)
    doc = json.loads(manifest.read_text())
    edit(doc)
    manifest.write_text(json.dumps(doc))
    with Ledger.open(tmp_path, registry=REGISTRY, create=False) as led:
        problems = led.verify()
        assert any(p.path == str(manifest) and "checksum" in p.message for p in problems)
        with pytest.raises(CorruptError, match="checksum") as info:
            led.events()
        assert str(manifest) in str(info.value)


def test_a_compacted_segment_rewritten_with_the_same_events_is_seen(tmp_path: Path) -> None:
    _, segment = _compacted(tmp_path)
    table = pq.read_table(segment)
    pq.write_table(table, segment, compression="snappy")  # same rows, other bytes
    with Ledger.open(tmp_path, registry=REGISTRY, create=False) as led:
        assert len(led.events()) == 8
        problems = led.verify()
        assert [p.path for p in problems] == [str(segment)]
        assert "digest its manifest recorded" in problems[0].message


def test_a_manifest_from_before_checksums_is_still_read(tmp_path: Path) -> None:
    manifest, _ = _compacted(tmp_path)
    doc = json.loads(manifest.read_text())
    del doc["checksum"]
    for entry in doc["segments"]:
        del entry["b3"]
    manifest.write_text(json.dumps(doc))
    with Ledger.open(tmp_path, registry=REGISTRY, create=False) as led:
        assert len(led.events()) == 8 and led.verify() == []


_KILLED_MID_WRITE = """
import os, sys
from pathlib import Path
from aka_ledger._fs import open_temp
fd = open_temp(Path(sys.argv[1]))
os.write(fd, b"PAR1 half a compacted segment")
os._exit(9)  # killed mid-write: the lock goes with the process, the temp stays
"""


def test_a_temp_left_by_a_killed_compaction_is_cleaned_by_the_next(tmp_path: Path) -> None:
    _compacted(tmp_path)
    tmp = tmp_path / "events" / "_compacted" / ".tmp-compact-0123456789ab"
    proc = subprocess.run([sys.executable, "-c", _KILLED_MID_WRITE, str(tmp)], timeout=60)
    assert proc.returncode == 9 and tmp.exists()
    old = time.time() - 30
    os.utime(tmp, (old, old))
    with Ledger.open(tmp_path, registry=REGISTRY) as led:
        assert [p.path for p in led.verify()] == [str(tmp)]
        led.compact()
        assert not tmp.exists()
        assert led.verify() == []


def test_a_temp_being_written_is_neither_reported_nor_removed(tmp_path: Path) -> None:
    from aka_ledger._fs import open_temp

    _compacted(tmp_path)
    tmp = tmp_path / "events" / "_compacted" / ".tmp-compact-ba9876543210"
    fd = open_temp(tmp)  # a compaction in flight holds its temp's lock
    try:
        old = time.time() - 30
        os.utime(tmp, (old, old))
        with Ledger.open(tmp_path, registry=REGISTRY) as led:
            assert led.verify() == []
            led.compact()
            assert tmp.exists()
    finally:
        os.close(fd)


def test_deep_verify_follows_digests_inside_trees(tmp_path: Path, cli: Any) -> None:
    import aka.events
    from aka_ledger import EventRegistry

    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "kernel.py").write_text("def k(): return 1\n")
    (work / "README").write_text("notes\n")
    root = tmp_path / "ledger"
    with Ledger.open(root, registry=REGISTRY) as led:
        tree = led.cas.snapshot(work)
        led.append(Stored(digest=tree), run_id="r", durable=True)
        inner = led.cas.put(b"def k(): return 1\n")
        path = led.cas.path(inner)
    assert path is not None
    path.unlink()  # a blob only the tree references
    aka.events.REGISTRY, saved = EventRegistry([*REGISTRY.types().values()]), aka.events.REGISTRY
    try:
        shallow = cli("ledger", "verify", "--ledger", str(root))
        deep = cli("ledger", "verify", "--deep", "--ledger", str(root))
    finally:
        aka.events.REGISTRY = saved
    assert shallow.code == 0, shallow.out + shallow.err
    assert deep.code == 1 and inner in deep.out and tree in deep.out, deep.out + deep.err


def test_the_ledger_files_temp_left_by_a_killed_creation_is_not_a_stray(tmp_path: Path) -> None:
    """A process killed while creating the ledger leaves the ledger file's temporary at the
    root: verify does not call it a stray while it may still be in flight, and the next
    process to open the ledger removes it once abandoned."""
    with Ledger.open(tmp_path, registry=REGISTRY) as led:
        led.append(Counted(key="c", by=1), run_id="r")
    tmp = tmp_path / ".tmp-meta-0123456789ab"
    proc = subprocess.run([sys.executable, "-c", _KILLED_MID_WRITE, str(tmp)], timeout=60)
    assert proc.returncode == 9 and tmp.exists()
    with Ledger.open(tmp_path, registry=REGISTRY, create=False) as led:
        assert led.verify() == []  # young: its writer may not hold its lock yet
        assert tmp.exists()
    old = time.time() - 30
    os.utime(tmp, (old, old))
    with Ledger.open(tmp_path, registry=REGISTRY, create=False) as led:
        assert not tmp.exists() and led.verify() == []
