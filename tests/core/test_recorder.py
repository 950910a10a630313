"""One recorder: the API, validation and held-out paths record like `aka run` does.

Durability comes from the event types, an attempt's failure is recorded once by the
lifecycle's boundary whoever drives it, and a validation's outcome events are signed
like a run's.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Literal

import pyarrow as pa
import pytest
from pydantic import Field

from aka import api, recorder
from aka import events as ev
from aka.api import Evaluator, Sample
from aka.config import TimingSettings
from aka.core import fold
from aka.events import REGISTRY
from aka.runkeys import arena_authority
from aka.validate import new_validation_id, validate_task
from aka_ledger import EventRegistry, Ledger, _writer

TASK = "torch/ops/affine"
WRONG = "def affine(x):\n    return x * 3\n"
TIMING = TimingSettings(max_time_s=0.2, min_samples=5)


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], bool]]:
    """Every batch a file ledger writes: (event types, whether it was synced)."""
    seen: list[tuple[list[str], bool]] = []
    real = _writer.FileWriter.write

    def spy(self: _writer.FileWriter, batch: pa.RecordBatch, *, durable: bool) -> None:
        seen.append((batch.column("type").to_pylist(), durable))
        real(self, batch, durable=durable)

    monkeypatch.setattr(_writer.FileWriter, "write", spy)
    return seen


def test_api_attempts_are_as_durable_as_their_event_types_say(
    tasks_root: Path, ledger_dir: Path, writes: list[tuple[list[str], bool]], cli
) -> None:
    sample = Sample(trainer="trl", step=3, prompt="make it fast", message="```python\n...```")
    with Evaluator(ledger_dir, tasks_root=tasks_root, device="cpu", timing=TIMING) as service:
        result = service.evaluate(TASK, {"kernel.py": WRONG}, sample=sample)
        run_id = service.run_id
    synced: dict[str, set[bool]] = {}
    for types, durable in writes:
        for t in types:
            synced.setdefault(t, set()).add(durable)
    assert synced["AttemptStarted"] == {True}, "an attempt's start must survive a crash"
    for tag, seen in synced.items():
        if REGISTRY.model(tag).durable:
            assert seen == {True}, tag
    assert synced["AgentOutput"] == {False}
    audit = cli("audit", result.attempt_key, "--run", run_id, "--ledger", str(ledger_dir))
    assert audit.code == 0, audit.err
    assert "score 20.00" in audit.out and "kernel.py" in audit.out, audit.out


def test_a_crash_inside_an_api_attempt_is_recorded_once_as_its_error(
    tasks_root: Path, ledger_dir: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    def crash(*args: object, **kwargs: object) -> ev.Scored:
        raise RuntimeError("the evaluator lost its device")

    with Evaluator(ledger_dir, tasks_root=tasks_root, device="cpu", timing=TIMING) as service:
        with monkeypatch.context() as m:
            m.setattr(api, "evaluate", crash)
            with pytest.raises(RuntimeError, match="lost its device"):
                service.evaluate(TASK, {"kernel.py": WRONG})
        ok = service.evaluate(TASK, {"kernel.py": WRONG})
        run_id = service.run_id
    with Ledger.open(ledger_dir, registry=REGISTRY, create=False) as led:
        envs = led.events(run_id=run_id)
    crashed = f"{TASK}#external#0"
    mine = Counter(type(e.payload).__name__ for e in envs if e.attempt_key == crashed)
    assert mine["AttemptStarted"] == 1 and mine["AttemptFinished"] == 1
    assert mine["Scored"] == 0
    [finished] = [
        e.payload
        for e in envs
        if e.attempt_key == crashed and isinstance(e.payload, ev.AttemptFinished)
    ]
    assert finished.status == "error" and "lost its device" in (finished.error or "")
    rows = json.loads(cli("report", run_id, "--ledger", str(ledger_dir), "--format", "json").out)
    assert [r["attempt_key"] for r in rows if r["score"] is not None] == [ok.attempt_key]


def test_a_validations_outcome_events_are_signed_so_a_forged_one_is_dropped(
    tasks_root: Path, ledger_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = new_validation_id()
    with Ledger.open(ledger_dir, registry=REGISTRY) as led:
        res = validate_task(
            led, tasks_root / TASK, root=tasks_root, device="cpu", run_id=run_id, quick=True
        )
    assert res.ok
    forged = ev.Scored(
        eval_id="forged", try_no=0, purpose="validate", compiled=True, correct=True,
        speedup=1.0, score=220.0, policy="agentkernelarena", policy_version=2,
        policy_spec="{}", components={},
    )  # fmt: skip
    with Ledger.open(ledger_dir, registry=REGISTRY) as plain:  # no key: anyone's append
        plain.append(forged, run_id=run_id)
    reader = arena_authority(sign=False)
    with Ledger.open(ledger_dir, registry=REGISTRY, authority=reader) as led:
        assert led.events(run_id=run_id, types=["Scored"]) == []
        assert [r.run_id for r in led.rejected] == [run_id]
        assert [e.type for e in led.events(run_id=run_id)] == ["TaskValidated"]


class Annotated(ev.EventModel):
    """A reviewer's note on an attempt (an event type added the documented way)."""

    durable = True
    type: Literal["Annotated"] = "Annotated"
    note: str = Field(description="What the reviewer noticed.")


def test_a_new_event_type_is_one_model_and_one_line(
    ledger_dir: Path, writes: list[tuple[list[str], bool]]
) -> None:
    registry = EventRegistry([*REGISTRY.types().values(), Annotated])
    with Ledger.open(ledger_dir, registry=registry) as led:
        recorder.record(led, "r", Annotated(note="fast but fragile"), attempt_key="k")
        recorder.record(led, "r", ev.RunFinished(attempts=0, scored=0))
        envs = led.events(run_id="r")
    assert [e.type for e in envs] == ["Annotated", "RunFinished"]
    assert writes[0] == (["Annotated"], True), "durable because the type says so"
    assert fold("r", envs).finished is not None, "the fold reads past a type it does not know"
