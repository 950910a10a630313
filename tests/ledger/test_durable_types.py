"""Durability is declared by the event type, so no appending call site decides it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar, Literal

import pytest

from aka_ledger import EventModel, EventRegistry, Ledger, _segments


class Noted(EventModel):
    """A progress note: losing the last one in a crash costs nothing."""

    type: Literal["Noted"] = "Noted"
    text: str


class Promised(EventModel):
    """An intent: it must be on disk before the side effect it announces starts."""

    durable: ClassVar[bool] = True
    type: Literal["Promised"] = "Promised"
    what: str


REG = EventRegistry([Noted, Promised])


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The file descriptors the live log fsyncs, in order."""
    seen: list[int] = []
    real = os.fsync

    def spy(fd: int) -> None:
        seen.append(fd)
        real(fd)

    monkeypatch.setattr(_segments.os, "fsync", spy)
    return seen


def test_a_durable_type_is_synced_without_the_caller_asking(
    tmp_path: Path, fsyncs: list[int]
) -> None:
    with Ledger.open(tmp_path / "l", registry=REG) as led:
        led.append(Noted(text="warm up"), run_id="r")  # opens the live log
        fsyncs.clear()
        led.append(Noted(text="a"), run_id="r")
        assert fsyncs == []
        led.append(Promised(what="run the agent"), run_id="r", attempt_key="k")
        assert len(fsyncs) == 1
        led.append_many([(Noted(text="b"), "r", None), (Promised(what="time it"), "r", "k")])
        assert len(fsyncs) == 2, "a batch holding one durable type is synced"
        led.append(Noted(text="c"), run_id="r", durable=True)
        assert len(fsyncs) == 3, "a caller may still force a sync"
        led.append(Promised(what="x"), run_id="r", durable=False)
        assert len(fsyncs) == 4, "a caller cannot weaken what the type declares"
    with Ledger.open(tmp_path / "l", registry=REG) as again:
        assert [e.type for e in again.events()][-1] == "Promised"


def test_the_declaration_is_not_a_field() -> None:
    """``durable`` is class data: it is not stored in the payload nor settable per event."""
    assert "durable" not in Promised.model_fields
    assert Promised(what="x").model_dump() == {"type": "Promised", "what": "x"}
    with pytest.raises(ValueError):
        Promised(what="x", durable=False)  # type: ignore[call-arg]
