"""Bad input through the CLI: a clear message naming the file, exit 1, no traceback,
and nothing already recorded is touched."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from ledger_vocab import Counted, Stored

from aka.cli import main
from aka_ledger import EventRegistry, Ledger, LedgerError, SchemaError

# `aka ledger verify` decodes with the arena's registry; these tests write with the
# test vocabulary, so they register it there for the duration of each test.


@pytest.fixture
def arena_registry(monkeypatch: pytest.MonkeyPatch) -> EventRegistry:
    from ledger_vocab import REGISTRY

    import aka.events

    merged = EventRegistry([*REGISTRY.types().values()])
    merged._upcasters.update(REGISTRY._upcasters)
    monkeypatch.setattr(aka.events, "REGISTRY", merged)
    return merged


def _ledger(root: Path, registry: EventRegistry) -> dict[str, Path]:
    led = Ledger.open(root, registry=registry, writer_id="w")
    blob = led.cas.put(b"artifact bytes")
    led.append_many([(Counted(key="a", by=i), "r", None) for i in range(5)])
    led.seal()
    led.append(Stored(digest=blob), run_id="r", durable=True)
    led.seal()
    led.append(Counted(key="b", by=9), run_id="r", durable=True)
    led.close()
    segs = sorted((root / "events" / "w").glob("*.parquet"))
    assert led.cas.path(blob) is not None
    return {"first": segs[0], "second": segs[1], "blob": led.cas.path(blob)}


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out = capsys.readouterr()
    return int(exit_info.value.code or 0), out.out + out.err


def _fingerprint(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _truncated_segment(f: dict[str, Path]) -> Path:
    os.truncate(f["first"], f["first"].stat().st_size // 2)
    return f["first"]


def _flip(p: Path) -> Path:
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0xFF
    p.write_bytes(bytes(data))
    return p


def _missing_blob(f: dict[str, Path]) -> Path:
    f["blob"].unlink()
    return f["second"]  # the segment whose event references it


def _deleted_segment(f: dict[str, Path]) -> Path:
    f["first"].unlink()
    return f["first"].parent


def _stray_file(f: dict[str, Path]) -> Path:
    stray = f["first"].parent / "notes.txt"
    stray.write_text("hi")
    return stray


DAMAGE: dict[str, tuple[Callable[[dict[str, Path]], Path], str]] = {
    "truncated segment": (_truncated_segment, "parse"),
    "corrupted segment": (lambda f: _flip(f["first"]), ""),
    "missing blob": (_missing_blob, "not in the content store"),
    "corrupted blob": (lambda f: _flip(f["blob"]), "does not hash"),
    "deleted segment": (_deleted_segment, "gap"),
    "stray file": (_stray_file, "stray"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_verify_names_the_damaged_file_and_exits_1(
    case: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    arena_registry: EventRegistry,
) -> None:
    root = tmp_path / "ledger"
    files = _ledger(root, arena_registry)
    code, out = _cli(capsys, "ledger", "verify", "--ledger", str(root))
    assert code == 0, out
    damage, words = DAMAGE[case]
    named = damage(files)
    before = _fingerprint(root)
    code, out = _cli(capsys, "ledger", "verify", "--ledger", str(root))
    assert code == 1
    assert "Traceback" not in out
    assert str(named) in out or str(named.relative_to(root)) in out, out
    assert words in out
    assert _fingerprint(root) == before, "verify must not touch anything recorded"


def test_a_ledger_from_a_newer_aka_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arena_registry: EventRegistry
) -> None:
    root = tmp_path / "ledger"
    _ledger(root, arena_registry)
    (root / "ledger.json").write_text(json.dumps({"format": 99}))
    before = _fingerprint(root)
    code, out = _cli(capsys, "ledger", "verify", "--ledger", str(root))
    assert code == 1 and "Traceback" not in out
    assert "ledger.json" in out and "newer aka" in out
    with pytest.raises(SchemaError, match="newer aka"):
        Ledger.open(root, registry=arena_registry)
    assert _fingerprint(root) == before


def test_a_payload_from_a_newer_aka_is_named_by_sql_and_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arena_registry: EventRegistry
) -> None:
    root = tmp_path / "ledger"
    files = _ledger(root, arena_registry)
    newer = EventRegistry()

    @newer.register
    class Counted(arena_registry.model("Counted")):  # type: ignore[misc]
        schema_version = 5

    led = Ledger.open(root, registry=newer, writer_id="future")
    led.append(Counted(key="z", by=1), run_id="r", durable=True)
    led.close()
    code, out = _cli(capsys, "ledger", "verify", "--ledger", str(root))
    assert code == 1 and "Traceback" not in out
    assert "newer" in out and "events/future" in out
    assert files["first"].exists()


def test_an_unwritable_directory_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(LedgerError, match="cannot create the ledger") as info:
        Ledger.open(blocker / "ledger", registry=EventRegistry())
    assert str(blocker / "ledger") in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_a_read_only_ledger_refuses_appends_by_name(tmp_path: Path) -> None:
    from ledger_vocab import REGISTRY

    root = tmp_path / "ledger"
    Ledger.open(root, registry=REGISTRY).close()
    os.chmod(root / "events", 0o500)
    try:
        led = Ledger.open(root, registry=REGISTRY, writer_id="w")
        with pytest.raises(LedgerError, match="events"):
            led.append(Counted(key="a", by=1), run_id="r")
    finally:
        os.chmod(root / "events", 0o700)


def test_sql_rejects_writes_and_bad_queries_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arena_registry: EventRegistry
) -> None:
    root = tmp_path / "ledger"
    _ledger(root, arena_registry)
    code, out = _cli(
        capsys, "sql", "SELECT count(*) AS n FROM events", "--ledger", str(root), "--format", "json"
    )
    assert code == 0 and json.loads(out) == [{"n": 7}]
    code, out = _cli(
        capsys, "sql", f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}'", "--ledger", str(root)
    )
    assert code == 2 and "Traceback" not in out and not (tmp_path / "x.csv").exists()
    code, out = _cli(capsys, "sql", "SELECT * FROM nowhere", "--ledger", str(root))
    assert code == 2 and "nowhere" in out


def test_reading_a_truncated_segment_names_it(
    tmp_path: Path, arena_registry: EventRegistry
) -> None:
    from aka_ledger import CorruptError

    root = tmp_path / "ledger"
    files = _ledger(root, arena_registry)
    _truncated_segment(files)
    with pytest.raises(CorruptError, match="does not parse") as info:
        Ledger.open(root, registry=arena_registry).events()
    assert str(files["first"]) in str(info.value)


def test_compact_and_bench_commands_run_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arena_registry: EventRegistry
) -> None:
    root = tmp_path / "ledger"
    _ledger(root, arena_registry)
    code, out = _cli(capsys, "ledger", "compact", "--ledger", str(root))
    assert code == 0 and json.loads(out)["manifest"] == 1
    code, out = _cli(capsys, "ledger", "verify", "--ledger", str(root))
    assert code == 0, out
    code, out = _cli(
        capsys, "bench", "ledger", "--events", "3000", "--blob-mb", "20", "--format", "json",
        "--dir", str(tmp_path),
    )  # fmt: skip
    assert code == 0
    report = json.loads(out)
    for key in ("append_events_per_s", "durable_append_p50_ms", "seal_s", "compact_s",
                "replay_s", "query_s", "cas_put_gb_per_s", "files_after_compaction"):  # fmt: skip
        assert report[key] > 0, key
    assert report["replayed_events"] == 3000 + 500 + 500 + 20 * 5 * 200
