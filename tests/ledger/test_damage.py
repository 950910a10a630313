"""Damaged bytes: checksummed live-log records, a torn tail told from damage, quarantine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from ledger_fuzz import KINDS
from ledger_vocab import REGISTRY, Counted

from aka_ledger import CorruptError, Ledger
from aka_ledger._envelope import encode, now_us
from aka_ledger._frames import HEADER_V1
from aka_ledger._segments import read_live

HERE = Path(__file__).parent


def _orphan(root: Path, batches: int = 3, per: int = 2) -> Path:
    """A dead writer's live log of ``batches`` records of ``per`` events each."""
    led = Ledger.open(root, registry=REGISTRY, writer_id="w", seal_rows=None)
    for i in range(batches):
        led.append_many([(Counted(key=f"k{i}", by=j), "r", None) for j in range(per)])
    led._store._writer.live.close()  # type: ignore[union-attr]  # dies without sealing
    return next((root / "events" / "w").glob("live-*.arrows"))


def _flip(path: Path, pos: int) -> None:
    data = bytearray(path.read_bytes())
    data[pos] ^= 0xFF
    path.write_bytes(bytes(data))


def _record_starts(path: Path) -> list[int]:
    data = path.read_bytes()
    return [i for i in range(len(data)) if data.startswith(b"AKR\x01", i)]


def test_damage_in_the_middle_is_reported_not_taken_for_a_torn_tail(tmp_path: Path) -> None:
    log = _orphan(tmp_path)
    starts = _record_starts(log)
    _flip(log, starts[1] + 40)  # inside the second record's body
    scan = read_live(log)
    assert [b.num_rows for b in scan.batches] == [2]
    assert not scan.torn and len(scan.damage) == 1 and scan.beyond == 1
    assert scan.damage[0].offset == starts[1] and "checksum" in scan.damage[0].reason
    with Ledger.open(tmp_path, registry=REGISTRY, create=False) as led:
        problems = led.verify()
        assert [p.path for p in problems] == [str(log)]
        assert "damaged bytes" in problems[0].message and "1 intact record(s) after" in (
            problems[0].message
        )
        assert [e.seq for e in led.events()] == [0, 1]


def test_a_flipped_length_of_the_last_record_is_damage_not_a_torn_tail(tmp_path: Path) -> None:
    log = _orphan(tmp_path)
    _flip(log, _record_starts(log)[-1] + 6)  # the length's high byte: now past the end
    scan = read_live(log)
    assert not scan.torn and scan.damage and "length" in scan.damage[0].reason
    with Ledger.open(tmp_path, registry=REGISTRY, create=False) as led:
        assert led.verify() != []


def test_a_torn_tail_is_not_damage(tmp_path: Path) -> None:
    log = _orphan(tmp_path)
    os.truncate(log, log.stat().st_size - 7)
    scan = read_live(log)
    assert scan.torn and not scan.damage and [b.num_rows for b in scan.batches] == [2, 2]
    with Ledger.open(tmp_path, registry=REGISTRY, create=False) as led:
        assert led.verify() == []


def test_a_writer_never_cuts_damaged_bytes_when_it_reopens(tmp_path: Path) -> None:
    log = _orphan(tmp_path)
    _flip(log, _record_starts(log)[1] + 40)
    before = log.read_bytes()
    with pytest.raises(CorruptError, match="damaged at byte") as info:
        Ledger.open(tmp_path, registry=REGISTRY, writer_id="w")
    assert "aka ledger compact" in str(info.value)
    assert log.read_bytes() == before


def test_compaction_seals_the_intact_prefix_and_quarantines_the_rest(tmp_path: Path) -> None:
    log = _orphan(tmp_path)
    _flip(log, _record_starts(log)[1] + 40)
    damaged = log.read_bytes()
    with Ledger.open(tmp_path, registry=REGISTRY) as led:
        result = led.compact()
        assert result.sealed_orphans == 1 and len(result.quarantined) == 1
        moved = Path(result.quarantined[0])
        assert moved.parent == tmp_path / "quarantine" / "w" and moved.read_bytes() == damaged
        assert not log.exists()
        assert [e.seq for e in led.events()] == [0, 1]
        problems = led.verify()
        assert [p.path for p in problems] == [str(moved)]
        assert "quarantined by compaction" in problems[0].message
    again = Ledger.open(tmp_path, registry=REGISTRY, writer_id="w")
    assert again.append(Counted(key="next", by=0), run_id="r").seq == 2
    again.close()


def test_compact_command_says_what_it_quarantined(
    tmp_path: Path, cli: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    import aka.events
    from aka_ledger import EventRegistry

    monkeypatch.setattr(aka.events, "REGISTRY", EventRegistry([*REGISTRY.types().values()]))
    log = _orphan(tmp_path)
    _flip(log, _record_starts(log)[2] + 40)
    result = cli("ledger", "compact", "--ledger", str(tmp_path))  # type: ignore[operator]
    assert result.code == 0, result.err
    assert "live-000000000000.arrows" in result.out
    assert "quarantined" in result.err and "nothing was deleted" in result.err
    verify = cli("ledger", "verify", "--ledger", str(tmp_path))  # type: ignore[operator]
    assert verify.code == 1 and "quarantined by compaction" in verify.out + verify.err


def test_a_live_log_from_before_checksums_is_read_and_continued(tmp_path: Path) -> None:
    """Format 1: a plain Arrow IPC stream, as every ledger written before this format."""
    items = [(Counted(key="old", by=i), "r", None) for i in range(3)]
    batch, envs = encode(items, writer_id="w", first_seq=0, time_us=now_us())
    (tmp_path / "events" / "w").mkdir(parents=True)
    (tmp_path / "cas").mkdir()
    (tmp_path / "ledger.json").write_text('{"format": 1}')
    log = tmp_path / "events" / "w" / "live-000000000000.arrows"
    log.write_bytes(HEADER_V1 + batch.serialize().to_pybytes())
    scan = read_live(log)
    assert scan.format == 1 and [b.num_rows for b in scan.batches] == [3]
    with Ledger.open(tmp_path, registry=REGISTRY, writer_id="w") as led:
        assert [e.event_id for e in led.events()] == [e.event_id for e in envs]
        assert led.append(Counted(key="new", by=0), run_id="r").seq == 3
    with Ledger.open(tmp_path, registry=REGISTRY, create=False) as led:
        assert [e.seq for e in led.events()] == [0, 1, 2, 3] and led.verify() == []


def test_a_record_with_a_good_checksum_but_bad_arrow_data_is_damage(tmp_path: Path) -> None:
    """A hostile writer can compute checksums: the body is still validated before use."""
    from aka_ledger._frames import frame_head

    log = _orphan(tmp_path, batches=1)
    bad = pa.py_buffer(b"\xff\xff\xff\xff" + b"\x10\x00\x00\x00" + b"\x00" * 16)
    with open(log, "ab") as fh:
        fh.write(frame_head(bad.size, bad) + bad.to_pybytes())
    scan = read_live(log)
    assert [b.num_rows for b in scan.batches] == [2] and scan.damage
    with Ledger.open(tmp_path, registry=REGISTRY, create=False) as led:
        assert led.verify() != []


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_flipping_any_byte_never_crashes_verify_nor_passes_a_loss(
    tmp_path: Path, kind: str
) -> None:
    """Every byte of a small live log, writer segment, compacted segment and manifest."""
    proc = subprocess.run(
        [sys.executable, str(HERE / "ledger_fuzz.py"), kind, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, (
        f"exit {proc.returncode} after {lines[-1:] or 'no flip'}\n{proc.stderr[-3000:]}"
    )
    size = len(lines)
    assert size > 200 and all('"bad": null' in line for line in lines)
