"""A killed run reads as interrupted, with the command that resumes it and the work it did."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from arena_helpers import write_config

from aka.events import REGISTRY
from aka.report import connect
from aka_ledger import Ledger


def _self_evals(ledger_dir: Path) -> int:
    if not (ledger_dir / "ledger.json").exists():
        return 0
    led = Ledger.open(ledger_dir, registry=REGISTRY, create=False)
    try:
        return int(
            connect(led)
            .execute("SELECT count(*) FROM all_scores WHERE purpose = 'self'")
            .fetchall()[0][0]
        )
    finally:
        led.close()


def test_a_killed_run_is_interrupted_and_its_self_evaluations_count(
    cli, tmp_path: Path, tasks_root: Path, ledger_dir: Path
) -> None:
    aka = f"{sys.executable} -m aka.cli"
    agent = {
        "name": "a",
        "agent": "command",
        "options": {"command": ["sh", "-c", f"{aka} eval && {aka} eval && sleep 600"]},
    }
    cfg = write_config(tmp_path, tasks_root, arms=[agent])
    proc = subprocess.Popen(
        [sys.executable, "-m", "aka.cli", "run", str(cfg), "--ledger", str(ledger_dir),
         "--run-id", "k1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while _self_evals(ledger_dir) < 2:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the agent's two self-evaluations never landed"
            time.sleep(1)
        [running] = json.loads(cli("status", "--ledger", str(ledger_dir), "--format", "json").out)
        assert running["status"] == "running" and running["resume"] == ""
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    [row] = json.loads(cli("status", "--ledger", str(ledger_dir), "--format", "json").out)
    assert row["status"] == "interrupted"
    assert row["resume"] == "aka resume k1"
    table = cli("status", "--ledger", str(ledger_dir))
    assert "`aka resume k1`" in table.err
    [attempt] = json.loads(cli("report", "k1", "--ledger", str(ledger_dir), "--format", "json").out)
    assert attempt["self_evals"] == 2
    assert attempt["score"] is None and "not run yet" not in attempt["error"]
