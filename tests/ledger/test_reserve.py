"""The space a writer holds back, so that its last words fit on a full disk.

A run whose disk filled must still record that it stopped there (and why): otherwise
resume and the reports see an attempt that started and never ended. A directory
ledger's writer keeps 1 MiB allocated beside its live log; ``release_reserve`` gives
it up for those last records.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from ledger_vocab import REGISTRY, Opened

from aka_ledger import Ledger
from aka_ledger._fs import RESERVE_BYTES, RESERVE_NAME


def test_a_writer_holds_its_reserve_and_gives_it_up_once(tmp_path: Path) -> None:
    with Ledger.open(tmp_path / "led", registry=REGISTRY) as led:
        led.append(Opened(name="a"), run_id="r")
        reserve = next((tmp_path / "led" / "events").glob(f"*/{RESERVE_NAME}"))
        assert reserve.stat().st_size == RESERVE_BYTES
        assert led.verify() == []  # the reserve is part of the ledger, not a stray
        assert led.release_reserve() is True and not reserve.exists()
        assert led.release_reserve() is False
        led.seal()
        led.append(Opened(name="b"), run_id="r")  # a new live log: the reserve again
        assert reserve.exists()
    assert Ledger.memory(registry=REGISTRY).release_reserve() is False


def test_on_a_full_disk_the_reserve_takes_the_last_record(tmpfs: Callable[[str], Path]) -> None:
    small_fs = tmpfs("4m")
    with Ledger.open(small_fs / "led", registry=REGISTRY) as led:
        led.append(Opened(name="first"), run_id="r")
        filler = small_fs / "filler"
        with open(filler, "wb") as f, pytest.raises(OSError):  # fill every byte left
            while True:
                f.write(b"\0" * (64 << 10))
                f.flush()
        with pytest.raises(Exception):  # noqa: B017  the disk refuses the next record
            led.append(Opened(name="x" * (256 << 10)), run_id="r", durable=True)
        assert led.release_reserve() is True
        led.append(Opened(name="stopped: the disk is full"), run_id="r", durable=True)
        names = [e.payload.name for e in led.events(run_id="r")]  # type: ignore[attr-defined]
    assert names[0] == "first" and names[-1] == "stopped: the disk is full"
