"""Outcome events count only when the run's key authenticates them: forgeries go nowhere."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from arena_helpers import write_config

from aka import events as ev
from aka.events import REGISTRY
from aka.runkeys import key_dir
from aka_ledger import Ledger
from aka_ledger._envelope import encode, now_us
from aka_ledger._frames import HEADER, frame_head

KEY = "torch/ops/affine#baseline#0"


def _aka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aka.cli", *args], capture_output=True, text=True, timeout=300
    )


def _run(tmp_path: Path, tasks_root: Path, run_id: str, **extra: object) -> Path:
    ledger_dir = tmp_path / "ledger"
    cfg = write_config(tmp_path, tasks_root, **extra)
    done = _aka("run", str(cfg), "--ledger", str(ledger_dir), "--run-id", run_id)
    assert done.returncode == 0, done.stderr
    return ledger_dir


def _forged(real: ev.Scored) -> ev.Scored:
    return real.model_copy(update={"score": 9999.0, "speedup": 99.0, "eval_id": "forged"})


def _report_scores(ledger_dir: Path, run_id: str) -> tuple[list[float], str]:
    done = _aka("report", run_id, "--ledger", str(ledger_dir), "--format", "json")
    assert done.returncode == 0, done.stderr
    return [row["score"] for row in json.loads(done.stdout)], done.stderr


def _raw_scores(ledger_dir: Path, run_id: str) -> list[float]:
    """What the ledger holds, read without authority (as before run keys existed)."""
    with Ledger.open(ledger_dir, registry=REGISTRY, create=False) as led:
        return [
            e.payload.score
            for e in led.events(run_id=run_id, types={"Scored"})
            if isinstance(e.payload, ev.Scored)
        ]


@pytest.fixture(scope="module")
def scored_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One real run (noop agent, CPU), copied by each test that damages it."""
    import shutil

    base = tmp_path_factory.mktemp("authority")
    keys = base / "keys"
    old = os.environ.get("AKA_KEY_DIR")
    os.environ["AKA_KEY_DIR"] = str(keys)
    try:
        tasks = base / "tasks"
        shutil.copytree(Path(__file__).parents[1] / "fixtures" / "tasks", tasks)
        ledger_dir = _run(base, tasks, "auth")
    finally:
        if old is None:
            del os.environ["AKA_KEY_DIR"]
        else:
            os.environ["AKA_KEY_DIR"] = old
    return ledger_dir, keys


@pytest.fixture
def run_copy(
    scored_run: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    import shutil

    ledger_dir, keys = scored_run
    monkeypatch.setenv("AKA_KEY_DIR", str(keys))
    dest = tmp_path / "ledger"
    shutil.copytree(ledger_dir, dest)
    return dest


def _real_score(ledger_dir: Path) -> list[float]:
    """The score the run's own evaluator recorded (its speedup is timed: not a constant)."""
    with Ledger.open(ledger_dir, registry=REGISTRY, create=False) as led:
        found = [e.payload for e in led.events(types={"Scored"})]
    real = [p.score for p in found if isinstance(p, ev.Scored) and p.purpose == "final"]
    # compiled, correct and timed: 120 + 100 x speedup (the A/A of a noop on a loaded
    # machine is not this test's business: CI once saw 0.65 here)
    assert real and all(x > 120.0 for x in real), real
    return real[:1]


def test_a_run_records_its_key_outside_the_ledger_and_verifies_clean(
    scored_run: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger_dir, keys = scored_run
    monkeypatch.setenv("AKA_KEY_DIR", str(keys))
    key = key_dir() / "auth.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 32
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert not any(p.suffix == ".key" for p in ledger_dir.rglob("*"))
    assert _aka("ledger", "verify", "--ledger", str(ledger_dir)).returncode == 0
    scores, _ = _report_scores(ledger_dir, "auth")
    assert scores == _real_score(ledger_dir)


def test_a_scored_forged_through_the_public_api_is_rejected(run_copy: Path) -> None:
    with Ledger.open(run_copy, registry=REGISTRY) as led:
        [real] = [e for e in led.events(types={"Scored"}) if e.payload.purpose == "final"]
        assert isinstance(real.payload, ev.Scored)
        forged = led.append(_forged(real.payload), run_id="auth", attempt_key=KEY, durable=True)
    assert 9999.0 in _raw_scores(run_copy, "auth")
    verify = _aka("ledger", "verify", "--ledger", str(run_copy))
    assert verify.returncode == 1
    assert forged.event_id in verify.stdout and "not authenticated" in verify.stdout
    scores, warning = _report_scores(run_copy, "auth")
    assert scores == [real.payload.score]
    assert "ignored 1 event(s) not authenticated" in warning
    audit = _aka("audit", KEY, "--run", "auth", "--ledger", str(run_copy))
    # Neither the forged score nor its eval id (digests in the table are hex: "9999"
    # alone turns up in one of them now and then).
    assert "9999.0" not in audit.stdout and "forged" not in audit.stdout
    sql = _aka(
        "sql",
        "SELECT count(*) AS n FROM events WHERE type = 'Scored'",
        "--ledger",
        str(run_copy),
        "--format",
        "json",
    )
    assert json.loads(sql.stdout)[0]["n"] == 1, sql.stdout + sql.stderr


def test_a_hand_made_live_log_in_a_new_writer_folder_is_rejected(run_copy: Path) -> None:
    with Ledger.open(run_copy, registry=REGISTRY, create=False) as led:
        [real] = [e for e in led.events(types={"Scored"}) if e.payload.purpose == "final"]
    assert isinstance(real.payload, ev.Scored)
    batch, _ = encode(
        [(_forged(real.payload), "auth", KEY)], writer_id="evaluator", first_seq=0, time_us=now_us()
    )
    body = batch.serialize()
    folder = run_copy / "events" / "evaluator"
    folder.mkdir()
    (folder / "live-000000000000.arrows").write_bytes(
        HEADER + frame_head(body.size, body) + body.to_pybytes()
    )
    assert 9999.0 in _raw_scores(run_copy, "auth")
    verify = _aka("ledger", "verify", "--ledger", str(run_copy))
    assert verify.returncode == 1 and "events/evaluator/live-000000000000.arrows" in verify.stdout
    scores, _ = _report_scores(run_copy, "auth")
    assert scores == [real.payload.score]


_AGENT = r"""
import os, sys
from pathlib import Path
from aka import events as ev
from aka.events import REGISTRY
from aka_ledger import Ledger

def ancestors():
    pid = os.getppid()
    while pid > 1:
        yield Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])

ledger = next(a[a.index(b"--ledger") + 1].decode() for a in ancestors() if b"--ledger" in a)
with Ledger.open(ledger, registry=REGISTRY) as led:
    mine = [e for e in led.events(types={"AttemptStarted"})][-1]
    scored = ev.Scored(
        eval_id="forged", try_no=mine.payload.try_no, purpose="final", compiled=True,
        correct=True, speedup=99.0, score=9999.0, policy="agentkernelarena",
        policy_version=2, policy_spec="{}", components={"score": 9999.0},
    )
    led.append(scored, run_id=mine.run_id, attempt_key=mine.attempt_key, durable=True)
    led.append(ev.AttemptFinished(try_no=mine.payload.try_no, status="scored"),
               run_id=mine.run_id, attempt_key=mine.attempt_key, durable=True)
Path(sys.argv[1]).write_text(ledger)
"""


@pytest.mark.slow
def test_an_agent_that_finds_the_ledger_cannot_score_its_own_attempt(
    tmp_path: Path, tasks_root: Path
) -> None:
    script = tmp_path / "forger.py"
    script.write_text(_AGENT)
    marker = tmp_path / "forged-into"
    arm = {
        "name": "baseline",
        "agent": "command",
        # uncontained, as where the kernel refuses namespaces (tests/core/test_agent_sandbox.py)
        "options": {"command": [sys.executable, str(script), str(marker)], "contain": False},
    }
    ledger_dir = _run(tmp_path, tasks_root, "inside", arms=[arm])
    assert Path(marker.read_text()).resolve() == ledger_dir.resolve(), "the agent found it"
    assert 9999.0 in _raw_scores(ledger_dir, "inside")
    verify = _aka("ledger", "verify", "--ledger", str(ledger_dir))
    assert verify.returncode == 1 and verify.stdout.count("not authenticated") == 2
    scores, warning = _report_scores(ledger_dir, "inside")
    # The evaluator's own score (compiled, correct, timed: 120 + 100 x the A/A speedup of
    # the unchanged baseline, 0.5-2 on a shared CPU as in test_control_arm), not the
    # forged 9999.
    assert len(scores) == 1 and 170.0 < scores[0] < 320.0 and "ignored 2 event(s)" in warning
