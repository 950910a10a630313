"""High-water marks: a deleted tail, a deleted writer or a deleted segment never verifies ok."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from ledger_vocab import REGISTRY, Counted

from aka_ledger import Ledger, LedgerError, Mark
from aka_ledger._scan import read_manifest

RECORD = b"AKR\x01"


def _writer(root: Path, wid: str, n: int, *, by: int = 1) -> Ledger:
    """``n`` events by writer ``wid``, one record each."""
    led = Ledger.open(root, registry=REGISTRY, writer_id=wid, seal_rows=None)
    for i in range(n):
        led.append(Counted(key=f"{wid}{i}", by=by), run_id="r", durable=True)
    return led


def _compact(root: Path) -> int:
    with Ledger.open(root, registry=REGISTRY) as led:
        result = led.compact()
        assert result.manifest is not None
        return result.manifest


def _problems(root: Path, marks: list[tuple[str, Mark]] | None = None) -> list[str]:
    with Ledger.open(root, registry=REGISTRY, create=False) as led:
        return [f"{p.path}: {p.message}" for p in led.verify(marks=marks or [])]


@pytest.fixture
def busy(tmp_path: Path) -> Path:
    """Writer ``a`` sealed and compacted; writer ``b`` alive (live log) at the compaction."""
    _writer(tmp_path, "a", 3).close()
    b = _writer(tmp_path, "b", 4)
    _compact(tmp_path)
    b._store._writer.live.close()  # type: ignore[union-attr]  # b dies after the compaction
    assert _problems(tmp_path) == []
    return tmp_path


def test_a_manifest_records_every_writer_it_saw_live_or_sealed(busy: Path) -> None:
    [manifest] = (busy / "events" / "_manifests").glob("*.json")
    read_manifest(manifest)  # the checksum covers the marks
    marks = {m[0]: m[1] for m in json.loads(manifest.read_text())["marks"]}
    assert marks == {"a": 2, "b": 3}


def test_a_deleted_tail_of_a_live_log_is_reported(busy: Path) -> None:
    log = next((busy / "events" / "b").glob("live-*.arrows"))
    data = log.read_bytes()
    log.write_bytes(data[: data.rindex(RECORD)])  # the last record cut cleanly
    problems = _problems(busy)
    assert any("writer b ends at seq 2" in p and "seq 3..3 missing" in p for p in problems)


def test_a_deleted_writer_is_reported(busy: Path) -> None:
    shutil.rmtree(busy / "events" / "b")
    problems = _problems(busy)
    assert any("writer b is missing" in p and "4 event(s) missing" in p for p in problems)


def test_a_deleted_compacted_segment_is_reported(busy: Path) -> None:
    [segment] = (busy / "events" / "_compacted").glob("*.parquet")
    segment.unlink()
    problems = _problems(busy)
    assert any("writer a is missing" in p for p in problems)
    assert any("listed in the latest manifest but missing" in p for p in problems)


def test_a_later_compaction_never_forgets_a_lost_tail(busy: Path) -> None:
    log = next((busy / "events" / "b").glob("live-*.arrows"))
    data = log.read_bytes()
    log.write_bytes(data[: data.rindex(RECORD)])
    assert _compact(busy) == 2  # seals b's shortened log, merges it
    problems = _problems(busy)
    assert any("writer b ends at seq 2" in p for p in problems)


def test_an_application_mark_shows_a_deleted_last_segment(tmp_path: Path) -> None:
    """No compaction ran: the marks an application recorded are what show the loss."""
    _writer(tmp_path, "a", 2).close()
    _writer(tmp_path, "a2", 1).close()
    with Ledger.open(tmp_path, registry=REGISTRY, create=False) as led:
        marks = [("run two's start", m) for m in led.marks().values()]
    assert {m.writer: m.last for _, m in marks} == {"a": 1, "a2": 0}
    assert _problems(tmp_path, marks) == []
    with Ledger.open(tmp_path, registry=REGISTRY, writer_id="a", seal_rows=None) as led:
        led.append(Counted(key="later", by=9), run_id="r")  # a writer going on is fine
    assert _problems(tmp_path, marks) == []
    for seg in (tmp_path / "events" / "a").glob("*.parquet"):
        if seg.name.endswith("000000000002.parquet"):
            seg.unlink()  # only what came after the marks: nothing marked is lost
    assert _problems(tmp_path, marks) == []
    shutil.rmtree(tmp_path / "events" / "a2")
    [problem] = _problems(tmp_path, marks)
    assert "writer a2 is missing: run two's start recorded" in problem


def test_events_replaced_under_a_mark_are_reported(tmp_path: Path) -> None:
    _writer(tmp_path, "a", 2).close()
    with Ledger.open(tmp_path, registry=REGISTRY, create=False) as led:
        marks = [("the record", m) for m in led.marks().values()]
    shutil.rmtree(tmp_path / "events" / "a")
    _writer(tmp_path, "a", 2, by=7).close()  # the same writer id, other events, consistent
    [problem] = _problems(tmp_path, marks)
    assert "events 0..1 of writer a are not the ones the record recorded" in problem


def test_a_memory_ledger_checks_marks_too() -> None:
    led = Ledger.memory(registry=REGISTRY, writer_id="m")
    led.append(Counted(key="x", by=1), run_id="r")
    gone = Mark("ghost", 4, "0" * 64)
    [problem] = led.verify(marks=[("somewhere", gone)])
    assert "writer ghost is missing" in problem.message


def _cuts(root: Path) -> list[tuple[str, Path, int | None]]:
    """Every event file whole, and every live log cut at each record boundary."""
    out: list[tuple[str, Path, int | None]] = []
    for f in sorted((root / "events").rglob("*")):
        if f.is_file() and f.parent.name != "_manifests":
            out.append((f"delete {f.relative_to(root)}", f, None))
            if f.suffix == ".arrows":
                data = f.read_bytes()
                starts = [i for i in range(len(data)) if data.startswith(RECORD, i)]
                out += [(f"cut {f.name} at {s}", f, s) for s in starts]
    return out


def _lost_and_problems(
    root: Path, copy: Path, what: str, path: Path, cut: int | None, marks: list[tuple[str, Mark]]
) -> tuple[int, list[str]]:
    with Ledger.open(root, registry=REGISTRY, create=False) as led:
        before = {e.event_id for e in led.events()}
    shutil.copytree(root, copy)
    target = copy / path.relative_to(root)
    if cut is None:
        target.unlink()
    else:
        target.write_bytes(target.read_bytes()[:cut])
    try:
        with Ledger.open(copy, registry=REGISTRY, create=False) as led:
            lost = len(before - {e.event_id for e in led.events()})
    except LedgerError:  # reads refuse (a listed file is gone): verify must say why too
        lost = len(before)
    return lost, _problems(copy, marks)


def test_no_deletion_under_a_manifest_verifies_ok(
    busy: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Any file or live-log tail the compaction saw: verify names a loss of its events."""
    cuts = _cuts(busy)
    assert len(cuts) >= 5
    for what, path, cut in cuts:
        copy = tmp_path_factory.mktemp("cut") / "ledger"
        lost, problems = _lost_and_problems(busy, copy, what, path, cut, [])
        assert lost == 0 or problems, f"{what}: {lost} event(s) lost, verify ok"


def test_no_deletion_under_an_application_mark_verifies_ok(
    busy: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A writer sealed after the last compaction is witnessed by the marks recorded later."""
    _writer(busy, "c", 2).close()
    with Ledger.open(busy, registry=REGISTRY, create=False) as led:
        marks = [("the next run", m) for m in led.marks().values()]
    cuts = _cuts(busy)
    assert any("events/c/" in what for what, _, _ in cuts)
    for what, path, cut in cuts:
        copy = tmp_path_factory.mktemp("cut") / "ledger"
        lost, problems = _lost_and_problems(busy, copy, what, path, cut, marks)
        assert lost == 0 or problems, f"{what}: {lost} event(s) lost, verify ok"
