"""Fault tests with the real orchestrator: kill a worker mid-attempt (a local process, a
Docker container, a Slurm job); its lease expires, the attempt is retried as a new try by
another worker, nothing is scored twice, and ``aka ledger verify`` is clean."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from aka import orchestrator
from aka.config import load_config
from aka.events import REGISTRY
from aka.views import install_views
from aka_ledger import Ledger
from aka_runners import (
    DockerSpec,
    SlurmSpec,
    read_leases,
    run_docker,
    run_local,
    start_docker,
    start_local,
    submit_slurm,
    watch_slurm,
)

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tests" / "fixtures" / "tasks"
TTL = 2.0


def _start_run(tmp_path: Path, repeats: int = 1) -> tuple[Path, str, Path]:
    """A CPU run whose first agent run (and only the first) sleeps, so it can be killed."""
    ledger_dir = tmp_path / "ledger"
    (tmp_path / "scratch").mkdir()
    marker = tmp_path / "scratch" / "first-try"
    command = ["sh", "-c", f"mkdir {marker} 2>/dev/null && sleep 30 || true"]
    cfg = {
        "label": "fault",
        "tasks": ["torch/ops/affine"],
        "tasks_root": str(TASKS),
        "arms": [
            {
                "name": "a",
                "agent": "command",
                "timeout_seconds": 90,
                "options": {"command": command},
            }
        ],
        "device": "cpu",
        "repeats": repeats,
        "timing": {"max_time_s": 0.2, "min_samples": 5},
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    ledger = Ledger.open(ledger_dir, registry=REGISTRY, create=True)
    try:
        rid = orchestrator.start_run(
            ledger, load_config(path), config_path=str(path), tasks_root=TASKS
        )
    finally:
        ledger.close()
    return ledger_dir, rid, marker


def _wait_for(marker: Path, what: str, timeout: float = 90) -> None:
    deadline = time.time() + timeout
    while not marker.exists():
        assert time.time() < deadline, f"the first agent run never started ({what})"
        time.sleep(0.1)


def _assert_scored_once_and_verified(ledger_dir: Path, rid: str, killed_worker: str) -> None:
    ledger = Ledger.open(ledger_dir, registry=REGISTRY)
    try:
        scored = Counter(e.attempt_key for e in ledger.events(run_id=rid, types=["Scored"]))
        state = orchestrator.run_state(ledger, rid)
        starts = [e.payload for e in ledger.events(run_id=rid, types=["AttemptStarted"])]
    finally:
        ledger.close()
    assert set(scored.values()) == {1} and set(scored) == set(state.attempts)
    retried = [a for a in state.attempts.values() if len(a.tries) == 2]
    assert len(retried) == 1, {k: len(a.tries) for k, a in state.attempts.items()}
    assert any(s.worker == killed_worker for s in starts)
    verify = subprocess.run(
        [
            sys.executable,
            "-c",
            "from aka.cli import main; main()",
            "ledger",
            "verify",
            "--ledger",
            str(ledger_dir),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    # The runner's own files live under sidecar/, which the ledger never reports.
    assert verify.returncode == 0, verify.stdout + verify.stderr
    problems = [
        line for line in verify.stdout.splitlines() if line.strip() and not line.endswith(": ok")
    ]
    assert problems == [], verify.stdout + verify.stderr


def test_killed_local_worker(tmp_path: Path) -> None:
    ledger_dir, rid, marker = _start_run(tmp_path)
    [victim] = start_local(rid, ledger_dir, workers=1, lease_ttl_s=TTL)
    _wait_for(marker, "local")
    os.killpg(victim.process.pid, signal.SIGKILL)  # the worker and its agent, mid-attempt
    victim.process.wait()
    summaries = run_local(rid, ledger_dir, workers=2, lease_ttl_s=TTL)
    assert all(s is not None for s in summaries), summaries
    _assert_scored_once_and_verified(ledger_dir, rid, "local-cpu0")
    # The workers view: the killed worker started one attempt and finished none; the
    # finished attempts of the others account for every attempt, busy within their span.
    ledger = Ledger.open(ledger_dir, registry=REGISTRY)
    try:
        con = ledger.connect()
        install_views(con)
        rows = con.execute(
            "SELECT worker, attempts_started, attempts_finished, busy_s, span_s, utilization "
            "FROM workers WHERE run_id = ? ORDER BY first_event",
            [rid],
        ).fetchall()
    finally:
        ledger.close()
    assert rows[0][:3] == ("local-cpu0", 1, 0)
    assert sum(r[2] for r in rows) == 1  # one attempt in this run
    for _, _started, finished, busy, span, util in rows[1:]:
        if finished:
            assert 0 < busy <= span + 1e-6 and 0 < util <= 1 + 1e-9


def test_killed_worker_attempt_moves_to_the_worker_still_running(tmp_path: Path) -> None:
    """Two workers of one launch (as on two GPUs); one dies mid-attempt and the other, once
    it has nothing else left, takes the dead one's attempt over when its lease expires."""
    ledger_dir, rid, marker = _start_run(tmp_path, repeats=2)
    both = start_local(rid, ledger_dir, workers=2, lease_ttl_s=TTL)
    _wait_for(marker, "two workers")
    deadline = time.time() + 90
    while True:  # the other attempt done, the sleeping one is the only live lease
        ledger = Ledger.open(ledger_dir, registry=REGISTRY)
        try:
            state = orchestrator.run_state(ledger, rid)
        finally:
            ledger.close()
        if sum(a.score is not None for a in state.attempts.values()) == 1:
            break
        assert time.time() < deadline, "the other worker never finished its attempt"
        time.sleep(0.1)
    [sleeping] = [k for k, a in state.attempts.items() if a.score is None]
    holder = read_leases(ledger_dir, rid, sleeping)[-1].worker_id
    victim = next(w for w in both if w.worker_id == holder)
    survivor = next(w for w in both if w is not victim)
    os.killpg(victim.process.pid, signal.SIGKILL)
    assert victim.wait() is None
    summary = survivor.wait()
    assert summary is not None and int(str(summary["executed"])) == 2, summary
    _assert_scored_once_and_verified(ledger_dir, rid, holder)
    tries = [lease.worker_id for lease in read_leases(ledger_dir, rid, sleeping)]
    assert tries == [holder, survivor.worker_id]


@pytest.mark.docker
def test_killed_docker_container(
    docker_client: Any, host_image: dict[str, Any], tmp_path: Path
) -> None:
    ledger_dir, rid, marker = _start_run(tmp_path)
    spec = DockerSpec(
        image=host_image["image"],
        python=host_image["python"],
        mounts={**host_image["mounts"], str(marker.parent): f"{marker.parent}:rw"},
        env={"TRITON_INTERPRET": "1"},
        network_mode="none",
    )
    [victim] = start_docker(rid, ledger_dir, spec, lease_ttl_s=TTL, client=docker_client)
    try:
        _wait_for(marker, "docker")
        victim.kill()
    finally:
        victim.remove(force=True)
    two = DockerSpec(**{**spec.__dict__, "workers": 2})
    summaries = run_docker(rid, ledger_dir, two, lease_ttl_s=TTL, client=docker_client)
    assert all(s is not None for s in summaries), summaries
    _assert_scored_once_and_verified(ledger_dir, rid, "docker-cpu0")


@pytest.mark.slurm
def test_scancelled_slurm_job(slurm_env: dict[str, str], tmp_path: Path) -> None:
    ledger_dir, rid, marker = _start_run(tmp_path)
    env = {**slurm_env, "TRITON_INTERPRET": "1"}
    job = submit_slurm(
        rid, ledger_dir, SlurmSpec(cpu_workers=1, cpus_per_worker=1), lease_ttl_s=TTL, env=env
    )
    _wait_for(marker, "slurm")
    subprocess.run(["scancel", job], env=env, check=True)
    watch_slurm(job, poll_s=0.5, timeout_s=60, env=env)
    again = submit_slurm(
        rid, ledger_dir, SlurmSpec(cpu_workers=2, cpus_per_worker=1), lease_ttl_s=TTL, env=env
    )
    watch_slurm(again, poll_s=1, timeout_s=240, env=env)
    _assert_scored_once_and_verified(ledger_dir, rid, f"slurm-{job}-0")
