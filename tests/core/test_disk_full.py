"""A full disk under the ledger: a clear infrastructure error, then `aka resume` finishes.

The try the disk stopped is not charged: with ``max_tries: 1`` the attempt still runs
again once space is freed (before, that try was spent and resume had nothing to do).
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from arena_helpers import write_config

from aka import events as ev
from aka.events import REGISTRY
from aka_ledger import Ledger

_CHATTY = "import sys\nw = sys.stdout.write\nfor i in range(300_000):\n    w('%08d %s\\n' % (i, 'z' * 200))\n"


@pytest.fixture
def small_fs(tmpfs: Callable[[str], Path]) -> Path:
    """A 20 MB tmpfs (needs root and mount; skipped elsewhere)."""
    return tmpfs("20m")


def _aka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aka.cli", *args], capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_a_full_ledger_disk_stops_the_run_clearly_and_resume_finishes(
    tmp_path: Path, tasks_root: Path, small_fs: Path
) -> None:
    script = tmp_path / "chatty.py"
    script.write_text(_CHATTY)  # about 63 MB of output: more than the file system holds
    arm = {
        "name": "chatty",
        "agent": "command",
        "options": {"command": [sys.executable, str(script)]},
    }
    cfg = write_config(tmp_path, tasks_root, arms=[arm], max_tries=1)
    ledger_dir = small_fs / "ledger"
    first = _aka("run", str(cfg), "--ledger", str(ledger_dir), "--run-id", "full")
    assert first.returncode == 3, first.stderr
    assert "could not be written" in first.stderr and "aka resume full" in first.stderr
    assert "Traceback" not in first.stderr
    with Ledger.open(ledger_dir, registry=REGISTRY, create=False) as led:
        envs = led.events(run_id="full")
    kinds = Counter(type(e.payload).__name__ for e in envs)
    assert kinds["AttemptStarted"] == 1
    assert kinds["Scored"] == 0 and kinds["RunFinished"] == 0
    stopped = [e.payload for e in envs if isinstance(e.payload, ev.AttemptFinished)]
    assert [(f.status, f.try_no) for f in stopped] == [("infra", 1)], "the stop is on record"

    subprocess.run(["mount", "-o", "remount,size=400m", str(small_fs)], check=True)
    again = _aka("resume", "full", "--ledger", str(ledger_dir))
    assert again.returncode == 0, again.stderr
    with Ledger.open(ledger_dir, registry=REGISTRY, create=False) as led:
        envs = led.events(run_id="full")
        assert led.verify() == []
    finals = [e.payload for e in envs if isinstance(e.payload, ev.Scored)]
    assert len(finals) == 1 and finals[0].purpose == "final" and finals[0].compiled
    started = [e.payload for e in envs if isinstance(e.payload, ev.AttemptStarted)]
    assert [s.try_no for s in started] == [1, 2]
    assert any(isinstance(e.payload, ev.RunFinished) for e in envs)
