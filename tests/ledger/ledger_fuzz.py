"""Flip every byte of one ledger file, one at a time, and check what verify and reads say.

Run as a script (``python ledger_fuzz.py KIND DIR``) so that a crash inside Arrow kills
this process, not pytest: the test then names the byte that crashed it. Prints one JSON
line per flip; exits 1 at the first flip that ``verify`` calls sound while events are
missing, or that compaction answers by deleting bytes it could not decode.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from ledger_vocab import REGISTRY, Counted

from aka_ledger import Ledger, LedgerError

KINDS = ("live", "segment", "compacted", "manifest")
COMPACT_STRIDE = 5  # compacting a copy costs fsyncs: every fifth flip is compacted too


def build(kind: str, root: Path) -> Path:
    """A small ledger whose file of ``kind`` is returned (the one to damage)."""
    led = Ledger.open(root, registry=REGISTRY, writer_id="w", seal_rows=None)
    for i in range(3):
        led.append_many([(Counted(key=f"k{i}", by=j), "r", "a") for j in range(2)], durable=True)
    if kind == "live":
        led._store._writer.live.close()  # type: ignore[attr-defined]  # an orphaned log
        return next((root / "events" / "w").glob("live-*.arrows"))
    led.close()
    if kind == "segment":
        return next((root / "events" / "w").glob("*.parquet"))
    with Ledger.open(root, registry=REGISTRY, writer_id="c") as other:
        other.append(Counted(key="c", by=1), run_id="r", durable=True)
    with Ledger.open(root, registry=REGISTRY) as compactor:
        assert compactor.compact().manifest == 1
    if kind == "compacted":
        return next((root / "events" / "_compacted").glob("*.parquet"))
    return next((root / "events" / "_manifests").glob("*.json"))


def _ids(root: Path) -> set[str] | None:
    try:
        with Ledger.open(root, registry=REGISTRY, create=False) as led:
            return {e.event_id for e in led.events()}
    except LedgerError:
        return None  # the read refused, naming the damage: never a silent loss


def _verify(root: Path) -> list[str]:
    with Ledger.open(root, registry=REGISTRY, create=False) as led:
        return [f"{p.path}: {p.message}" for p in led.verify()]


def _compact_keeps_bytes(root: Path, target: Path, data: bytes, scratch: Path) -> str | None:
    """Compact a copy; a damaged live log must be sealed in part and quarantined whole."""
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(root, scratch)
    before = _ids(scratch) or set()
    try:
        with Ledger.open(scratch, registry=REGISTRY) as led:
            result = led.compact()
    except LedgerError:
        return None  # refused: nothing deleted
    moved = [Path(p).read_bytes() for p in result.quarantined]
    still = scratch / target.relative_to(root)
    if not still.exists() and data not in moved and result.sealed_orphans == 0:
        return "the live log was deleted although nothing was sealed"
    after = _ids(scratch)
    if after is not None and not before <= after:
        return f"compaction lost {len(before - after)} readable event(s)"
    if moved and not _verify(scratch):
        return "verify is clean with bytes in quarantine"
    return None


def main(kind: str, workdir: Path) -> int:
    root = workdir / "ledger"
    target = build(kind, root)
    baseline = _ids(root)
    assert baseline and not _verify(root)
    original = target.read_bytes()
    for pos in range(len(original)):
        data = bytearray(original)
        data[pos] ^= 0x01 if pos % 2 else 0xFF
        target.write_bytes(bytes(data))
        problems = _verify(root)
        verdict = None
        if not problems and (ids := _ids(root)) != baseline:
            verdict = f"verify is clean but {len(baseline - (ids or set()))} event(s) are missing"
        elif kind == "live" and pos % COMPACT_STRIDE == 0:
            verdict = _compact_keeps_bytes(root, target, bytes(data), workdir / "scratch")
        print(json.dumps({"pos": pos, "problems": len(problems), "bad": verdict}), flush=True)
        if verdict:
            return 1
    target.write_bytes(original)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2])))
