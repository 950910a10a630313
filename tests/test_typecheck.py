"""mypy, run with the project's configuration, sees the ledger's real types.

The ledger, agents and runners live in folders named otherwise than their import names
(``ledger/`` is ``aka_ledger``); if mypy could not resolve them it would treat them as
``Any`` and pass anything. A scratch file that misuses :class:`aka_ledger.Ledger` must be
reported, and the same file used correctly must not.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

HEADER = """\
from aka.events import REGISTRY, RunFinished
from aka_ledger import Envelope, Ledger

ledger = Ledger.memory(registry=REGISTRY)
"""


def _mypy(tmp_path: Path, body: str) -> list[str]:
    """mypy's error lines for a scratch module (the project's config, its cache)."""
    scratch = tmp_path / "scratch_use.py"
    scratch.write_text(HEADER + textwrap.dedent(body))
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", str(scratch)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr  # 2: mypy itself failed
    return [line for line in proc.stdout.splitlines() if ": error: " in line]


def test_a_wrong_use_of_the_ledger_is_reported(tmp_path: Path) -> None:
    errors = _mypy(
        tmp_path,
        """
        env: Envelope = ledger.append("RunFinished", run_id=7)
        ledger.apend(RunFinished(attempts=0, scored=0), run_id="r0")
        count: str = len(ledger.events(run_id="r0"))
        """,
    )
    found = {
        (int(m.group(1)), m.group(2))
        for m in (re.search(r"scratch_use\.py:(\d+): error: .*\[([a-z-]+)\]$", e) for e in errors)
        if m
    }
    assert found == {(6, "arg-type"), (7, "attr-defined"), (8, "assignment")}, errors
    assert any('"append" of "Ledger"' in e and '"str"' in e for e in errors), errors


def test_the_same_calls_used_rightly_pass(tmp_path: Path) -> None:
    errors = _mypy(
        tmp_path,
        """
        env: Envelope = ledger.append(RunFinished(attempts=0, scored=0), run_id="r0")
        count: int = len(ledger.events(run_id="r0"))
        """,
    )
    assert errors == []
