"""Concurrent commands on one run: a run lock per driving process, claims for every runner."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from arena_helpers import write_config

from aka import events as ev
from aka.events import REGISTRY
from aka.orchestrator import prepare_run
from aka.runlock import RunLockedError, lock_run, run_holder
from aka_ledger import Ledger

REPEATS = 4


def _aka(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "aka.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _finish(*procs: subprocess.Popen[bytes]) -> list[tuple[int, str]]:
    out = []
    for p in procs:
        _, err = p.communicate(timeout=300)
        out.append((p.returncode, err.decode()))
    return out


def _scored_once(ledger_dir: Path, run_id: str) -> None:
    """Every planned attempt has exactly one final score and was started once."""
    led = Ledger.open(ledger_dir, registry=REGISTRY, create=False)
    envs = led.events(run_id=run_id)
    planned = {e.attempt_key for e in envs if isinstance(e.payload, ev.AttemptPlanned)}
    finals = Counter(
        e.attempt_key
        for e in envs
        if isinstance(e.payload, ev.Scored) and e.payload.purpose == "final"
    )
    started = Counter(e.attempt_key for e in envs if isinstance(e.payload, ev.AttemptStarted))
    assert len(planned) == REPEATS
    assert finals == dict.fromkeys(planned, 1), finals
    assert started == dict.fromkeys(planned, 1), started
    assert sum(isinstance(e.payload, ev.RunStarted) for e in envs) == 1
    led.close()


def _recorded_run(tmp_path: Path, tasks_root: Path, run_id: str) -> Path:
    ledger_dir = tmp_path / "ledger"
    cfg = write_config(tmp_path, tasks_root, repeats=REPEATS)
    with Ledger.open(ledger_dir, registry=REGISTRY) as led:
        prepare_run(led, cfg, run_id=run_id)
    return ledger_dir


def _refused(err: str) -> None:
    assert "is being driven by pid" in err and socket.gethostname() in err, err
    assert "Traceback" not in err


@pytest.mark.slow
def test_two_concurrent_resumes_run_every_attempt_once(tmp_path: Path, tasks_root: Path) -> None:
    ledger_dir = _recorded_run(tmp_path, tasks_root, "twice")
    results = _finish(
        _aka("resume", "twice", "--ledger", str(ledger_dir)),
        _aka("resume", "twice", "--ledger", str(ledger_dir)),
    )
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    _refused(next(err for code, err in results if code == 2))
    _scored_once(ledger_dir, "twice")


@pytest.mark.slow
def test_two_concurrent_runs_with_one_run_id_record_it_once(
    tmp_path: Path, tasks_root: Path
) -> None:
    ledger_dir = tmp_path / "ledger"
    cfg = write_config(tmp_path, tasks_root, repeats=REPEATS)
    Ledger.open(ledger_dir, registry=REGISTRY).close()
    args = ("run", str(cfg), "--ledger", str(ledger_dir), "--run-id", "same")
    results = _finish(_aka(*args), _aka(*args))
    assert sorted(code for code, _ in results) == [0, 2], results
    _refused(next(err for code, err in results if code == 2))
    _scored_once(ledger_dir, "same")


@pytest.mark.slow
def test_the_inline_runner_and_a_worker_claim_from_one_pool(
    tmp_path: Path, tasks_root: Path
) -> None:
    ledger_dir = _recorded_run(tmp_path, tasks_root, "shared")
    worker = _aka("worker", "--run", "shared", "--ledger", str(ledger_dir), "--worker-id", "w1")
    inline = _aka("resume", "shared", "--ledger", str(ledger_dir))
    results = _finish(worker, inline)
    assert [code for code, _ in results] == [0, 0], results
    _scored_once(ledger_dir, "shared")


def test_a_held_run_is_refused_with_its_holder_and_freed_on_exit(tmp_path: Path) -> None:
    with lock_run(tmp_path, "r", holder="first"):
        with pytest.raises(RunLockedError) as info, lock_run(tmp_path, "r", holder="second"):
            pass
        holder = run_holder(tmp_path, "r")
        assert holder is not None and holder.worker_id == "first"
        assert info.value.holder.pid > 0 and str(info.value.holder.pid) in info.value.message
    assert run_holder(tmp_path, "r") is None
    with lock_run(tmp_path, "r", holder="third") as claim:
        assert claim.try_number == 2


def test_a_lock_left_by_a_killed_command_is_taken_over(tmp_path: Path) -> None:
    code = (
        "import os, sys; from pathlib import Path; from aka.runlock import lock_run\n"
        "cm = lock_run(Path(sys.argv[1]), 'r', holder='doomed'); cm.__enter__()\n"
        "os._exit(0)  # dies holding the lock, as after SIGKILL\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=60)
    with lock_run(tmp_path, "r", holder="next", ttl_s=3600) as claim:
        assert claim.try_number == 2


@pytest.mark.parametrize("bad", ["../../../x", "a/b", "..", ".hidden", "", "x" * 129, "a b"])
def test_a_run_id_that_is_not_one_safe_name_is_refused(
    tmp_path: Path, tasks_root: Path, bad: str
) -> None:
    cfg = write_config(tmp_path, tasks_root)
    proc = _aka("run", str(cfg), "--ledger", str(tmp_path / "ledger"), "--run-id", bad)
    code, err = _finish(proc)[0]
    assert code == 2 and "invalid run id" in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["run.yaml", "tasks", "ledger"])
    assert not (tmp_path / "ledger" / "sidecar").exists()
