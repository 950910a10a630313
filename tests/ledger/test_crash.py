"""A writer killed with SIGKILL at random moments loses no durable event.

Each trial starts a child that appends (durable singles, batches, blobs, seals) and
acks every durable append after it returns; the child is killed after a random delay.
Reopening with the same writer id must recover: every acked event present, nothing
duplicated, sequence numbers gap-free, ``verify`` clean, and appending continues.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ledger_vocab import REGISTRY, Counted, Stored

from aka_ledger import Ledger

ROOTS = 5
KILLS_PER_ROOT = 10  # 50 SIGKILL trials in all


@pytest.fixture(scope="module")
def zygote() -> Iterator[subprocess.Popen[str]]:
    """One warm process that forks each trial's writer (see ``ledger_workers.zygote``)."""
    here = Path(__file__).parent
    proc = subprocess.Popen(
        [sys.executable, "-c", "import ledger_workers; ledger_workers.zygote()"],
        cwd=here,
        env={**os.environ, "PYTHONPATH": str(here)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    yield proc
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=30)


def _fork_writer(zygote: subprocess.Popen[str], *args: object) -> int:
    assert zygote.stdin is not None and zygote.stdout is not None
    zygote.stdin.write(json.dumps(list(args)) + "\n")
    zygote.stdin.flush()
    return int(zygote.stdout.readline())


def _kill_and_wait(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.001)
    raise AssertionError(f"writer {pid} survived SIGKILL")


def _key(env: object) -> str:
    payload = env.payload  # type: ignore[attr-defined]
    return payload.key if isinstance(payload, Counted) else str(payload.note)


def _wait_for(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, "the child writer never started"
        time.sleep(0.002)


@pytest.mark.parametrize("root_no", range(ROOTS))
def test_sigkill_at_random_moments_loses_no_durable_event(
    tmp_path: Path, zygote: subprocess.Popen[str], root_no: int
) -> None:
    rng = random.Random(root_no)
    root = tmp_path / "ledger"
    ack = tmp_path / "acks"
    ready = tmp_path / "ready"
    for trial in range(KILLS_PER_ROOT):
        ready.unlink(missing_ok=True)
        args = (str(root), "crashy", str(ack), trial * 1_000_000, rng.random(), str(ready))
        pid = _fork_writer(zygote, *args)
        if trial % 5:  # most trials kill mid-append; the others possibly mid-recovery
            _wait_for(ready)
        time.sleep(rng.uniform(0.0, 0.2))
        _kill_and_wait(pid)
        acked = {line for line in ack.read_text().split("\n")[:-1]} if ack.exists() else set()
        with Ledger.open(root, registry=REGISTRY, writer_id="crashy") as ledger:
            events = ledger.events()
            keys = [_key(e) for e in events]
            assert acked <= set(keys), f"trial {trial}: lost {sorted(acked - set(keys))[:5]}"
            assert len(keys) == len(set(keys)), f"trial {trial}: an event appears twice"
            assert [e.seq for e in events] == list(range(len(events)))
            assert ledger.verify() == [], f"trial {trial}"
            nxt = ledger.append(Counted(key=f"after-{trial}", by=0), run_id="r", durable=True)
            assert nxt.seq == len(events)
            for e in events:
                if isinstance(e.payload, Stored):
                    assert ledger.cas.exists(e.payload.digest)
    assert len(acked) >= KILLS_PER_ROOT, "too few durable appends: the kills tested little"
