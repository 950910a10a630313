"""`aka run` killed with SIGKILL at random moments, then `aka resume`, finishes exactly once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from arena_helpers import write_config

from aka import events as ev
from aka.events import REGISTRY
from aka_ledger import Ledger

TRIALS = int(os.environ.get("AKA_KILL_TRIALS", "10"))


def _aka(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "aka.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _check(ledger_dir: Path, run_id: str, planned: int) -> None:
    led = Ledger.open(ledger_dir, registry=REGISTRY, create=False)
    envs = led.events(run_id=run_id)
    finals = Counter(
        e.attempt_key
        for e in envs
        if isinstance(e.payload, ev.Scored) and e.payload.purpose == "final"
    )
    assert len(finals) == planned and set(finals.values()) == {1}, finals
    # No attempt that had a result was started again afterwards.
    scored_at: dict[str | None, int] = {}
    for i, e in enumerate(envs):
        if isinstance(e.payload, ev.Scored) and e.payload.purpose == "final":
            scored_at[e.attempt_key] = i
        if isinstance(e.payload, ev.AttemptStarted):
            assert e.attempt_key not in scored_at, f"{e.attempt_key} re-run after its score"
    assert led.verify() == []
    led.close()


@pytest.mark.slow
def test_sigkill_then_resume(tmp_path: Path, tasks_root: Path) -> None:
    cfg = write_config(tmp_path, tasks_root, repeats=3)
    rng = random.Random(1234)
    for trial in range(TRIALS):
        ledger_dir = tmp_path / f"ledger{trial}"
        run_id = f"kill{trial}"
        proc = _aka("run", str(cfg), "--ledger", str(ledger_dir), "--run-id", run_id)
        time.sleep(rng.uniform(0.5, 8.0))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        again = _aka("resume", run_id, "--ledger", str(ledger_dir))
        _, err = again.communicate(timeout=300)
        if again.returncode == 2 and (
            b"no run" in err or b"no ledger" in err
        ):  # killed before the run was recorded
            again = _aka("run", str(cfg), "--ledger", str(ledger_dir), "--run-id", run_id)
            _, err = again.communicate(timeout=300)
        assert again.returncode == 0, err.decode()
        _check(ledger_dir, run_id, planned=3)
