"""The timing gate: prepared processes are stopped while a candidate times, and go on after.

A prepared process (a spare, or an evaluation's own checker before its request) may start
CUDA while the candidate compiles and checks, never while it is timed. These tests watch
the processes' scheduler state (``T``: stopped) in ``/proc`` at the moment the gate
closes and after the evaluation.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from proc_state import settles

from aka.eval._gate import Gate
from aka.eval._pipeline import run_job
from aka.eval._workers import Workers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "redteam"))
from redteam_corpus import CORPUS, scale_job

HONEST = (CORPUS / "honest_vectorized.py").read_text()
SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def _sleepers(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen(SLEEPER, start_new_session=True) for _ in range(n)]


def _end(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.kill()
        p.wait()


def test_close_stops_the_waiting_processes_and_open_lets_them_go_on() -> None:
    device, gate = "gate-test", Gate()
    timer, early, late, other = procs = _sleepers(4)
    granted: list[int] = []
    try:
        gate.register(device, early.pid)
        gate.register("gate-test-other-device", other.pid)
        gate.activate(device, timer.pid)
        gate.close(device, timer.pid, lambda: granted.append(timer.pid))
        assert gate.closed(device) and granted == [timer.pid]
        assert settles(early.pid, stopped=True)
        assert settles(timer.pid, stopped=False)  # the timer itself runs
        gate.register(device, late.pid)  # started while the device is timed
        assert settles(late.pid, stopped=True)
        assert settles(other.pid, stopped=False)  # another device is not touched
        gate.release(device, early.pid)  # it gets its request: it must run
        assert settles(early.pid, stopped=False)
        assert gate.waiting(device) == {late.pid}
        gate.open(device, timer.pid)
        assert not gate.closed(device)
        assert settles(late.pid, stopped=False)
    finally:
        _end(procs)


def test_evaluations_in_flight_overlap_but_time_one_at_a_time() -> None:
    """Two candidates and a checker evaluate at once: while one times, the others are
    stopped; the second to ask is granted only when the first is gone, and a process
    that dies while queued never gets the device."""
    device, gate = "gate-test-flight", Gate()
    a, b, checker, dead = procs = _sleepers(4)
    granted: list[str] = []
    try:
        for p in procs:
            gate.activate(device, p.pid)
        gate.close(device, a.pid, lambda: granted.append("a"))
        assert granted == ["a"]
        assert all(settles(p.pid, stopped=True) for p in (b, checker, dead))
        gate.close(device, dead.pid, lambda: granted.append("dead"))  # asked, then died
        gate.close(device, b.pid, lambda: granted.append("b"))
        assert granted == ["a"]  # queued behind the timer
        gate.open(device, dead.pid)
        gate.open(device, a.pid)  # a is gone: b's turn, the rest stay stopped
        assert granted == ["a", "b"] and gate.closed(device)
        assert settles(b.pid, stopped=False) and settles(checker.pid, stopped=True)
        gate.activate(device, a.pid)  # a process getting its request while b times
        assert settles(a.pid, stopped=True)
        gate.open(device, b.pid)
        assert not gate.closed(device) and granted == ["a", "b"]
        assert settles(checker.pid, stopped=False) and settles(a.pid, stopped=False)
        assert gate.active(device) == {a.pid, checker.pid}
    finally:
        _end(procs)


def test_with_the_gate_switched_off_every_request_is_answered_at_once() -> None:
    device, gate = "gate-test-off", Gate(stop=False)
    a, b = procs = _sleepers(2)
    granted: list[int] = []
    try:
        for p in procs:
            gate.activate(device, p.pid)
            gate.close(device, p.pid, lambda p=p: granted.append(p.pid))
        assert granted == [a.pid, b.pid] and settles(b.pid, stopped=False)
    finally:
        _end(procs)


@pytest.mark.usefixtures("no_clean_baseline")
def test_prepared_processes_are_stopped_while_each_candidate_times(
    tmp_path: Path, warm: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[int, bool]] = []
    gate = warm.gate
    real_close = gate.close

    def close(device: str, pid: int, grant: Callable[[], None]) -> None:
        real_close(device, pid, grant)
        seen.append({p: settles(p, stopped=True) for p in gate.waiting(device)})

    monkeypatch.setattr(gate, "close", close)
    for name in ("a", "b"):
        job, root = scale_job(tmp_path / name, HONEST, seeds=1, seed=5)
        verdict = run_job(job, root, workers=warm)
        assert verdict.correct, verdict.error
        assert not gate.closed(job.device)
    assert len(seen) == 2
    # The first evaluation forked its own processes, then the spares for the second:
    # both spares were stopped while it timed. The second had the candidate spare for
    # the next stopped, and its own checker (the spare it took, still without a request);
    # no checker was started for the next, since the one it holds comes back
    # (test_checker_reuse.py).
    assert len(seen[0]) == 2 and all(seen[0].values()), seen
    assert len(seen[1]) == 2 and all(seen[1].values()), seen
    assert set(seen[1]) & set(seen[0]) and set(seen[1]) - set(seen[0])
    for pids in warm.spares.waiting().values():  # the next spares run once the timing is over
        assert all(settles(pid, stopped=False) for pid in pids)


@pytest.mark.parametrize(("answer", "ok"), [(b"g", True), (b"", False), (b"x", False)])
def test_the_candidate_times_only_after_the_evaluator_answers(answer: bytes, ok: bool) -> None:
    code = (
        "from aka.eval._prepare import wait_for_gate\n"
        "sent = []\n"
        "wait_for_gate(sent.append)\n"
        "assert sent == [{'kind': 'mark', 'name': 'gate'}]\n"
        "print('timing')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input=answer, capture_output=True, timeout=60
    )
    assert (done.returncode == 0) == ok, done.stderr
    assert (b"timing" in done.stdout) == ok
    if not ok:
        assert b"did not open the timing gate" in done.stderr


def test_the_device_is_handed_over_once_the_timer_reports_its_last_sample() -> None:
    """The timed candidate hands over its outputs and exits after its last sample: the
    next candidate times meanwhile (the first is stopped like any other process then),
    and with none queued everything goes on."""
    device, gate = "gate-test-timed", Gate()
    a, b, checker = procs = _sleepers(3)
    granted: list[str] = []
    try:
        for p in procs:
            gate.activate(device, p.pid)
        gate.close(device, a.pid, lambda: granted.append("a"))
        gate.close(device, b.pid, lambda: granted.append("b"))  # queued, stopped
        assert settles(checker.pid, stopped=True) and settles(b.pid, stopped=True)
        gate.timed(device, b.pid)  # not the timer: nothing changes
        assert granted == ["a"] and settles(checker.pid, stopped=True)
        gate.timed(device, a.pid)  # a's last sample: b times, a finishes when b is done
        assert granted == ["a", "b"] and gate.timer(device) == b.pid
        assert settles(a.pid, stopped=True) and settles(checker.pid, stopped=True)
        assert settles(b.pid, stopped=False)
        gate.open(device, a.pid)  # a exits meanwhile: b's turn is not cut short
        assert gate.timer(device) == b.pid
        gate.timed(device, b.pid)  # none queued: everything goes on, b exits later
        assert not gate.closed(device)
        assert settles(checker.pid, stopped=False) and settles(b.pid, stopped=False)
        late = _sleepers(1)[0]
        procs.append(late)
        gate.register(device, late.pid)  # a spare started while b exits: it runs
        assert settles(late.pid, stopped=False)
        gate.open(device, b.pid)
        assert gate.active(device) == {checker.pid}
    finally:
        _end(procs)
