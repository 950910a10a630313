"""The timing gate: prepared processes are stopped while a candidate times, and go on after.

A prepared process (a spare, or an evaluation's own checker before its request) may start
CUDA while the candidate compiles and checks, never while it is timed. These tests watch
the processes' scheduler state (``T``: stopped) in ``/proc`` at the moment the gate
closes and after the evaluation.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from aka.eval._gate import Gate
from aka.eval._pipeline import run_job
from aka.eval._workers import Workers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "redteam"))
from redteam_corpus import CORPUS, scale_job

HONEST = (CORPUS / "honest_vectorized.py").read_text()
SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def _settles(pid: int, stopped: bool, timeout: float = 5.0) -> bool:
    """Whether ``pid`` reaches (or leaves) the stopped state within ``timeout``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if (_state(pid) == "T") == stopped:
            return True
        time.sleep(0.01)
    return False


def test_close_stops_the_waiting_processes_and_open_lets_them_go_on() -> None:
    device, _gate = "gate-test", Gate()
    early, late, other = (subprocess.Popen(SLEEPER) for _ in range(3))
    try:
        _gate.register(device, early.pid)
        _gate.register("gate-test-other-device", other.pid)
        _gate.close(device)
        assert _gate.closed(device)
        assert _settles(early.pid, stopped=True)
        _gate.register(device, late.pid)  # started while the device is timed
        assert _settles(late.pid, stopped=True)
        assert _settles(other.pid, stopped=False)  # another device is not touched
        _gate.release(device, early.pid)  # it gets its request: it must run
        assert _settles(early.pid, stopped=False)
        assert _gate.waiting(device) == {late.pid}
        _gate.open(device)
        assert not _gate.closed(device)
        assert _settles(late.pid, stopped=False)
    finally:
        for p in (early, late, other):
            _gate.release(device, p.pid)
            _gate.release("gate-test-other-device", p.pid)
            p.kill()
            p.wait()


def test_prepared_processes_are_stopped_while_each_candidate_times(
    tmp_path: Path, warm: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[int, bool]] = []
    gate = warm.gate
    real_close = gate.close

    def close(device: str) -> None:
        real_close(device)
        seen.append({pid: _settles(pid, stopped=True) for pid in gate.waiting(device)})

    monkeypatch.setattr(gate, "close", close)
    for name in ("a", "b"):
        job, root = scale_job(tmp_path / name, HONEST, seeds=1, seed=5)
        verdict = run_job(job, root, workers=warm)
        assert verdict.correct, verdict.error
        assert not gate.closed(job.device)
    assert len(seen) == 2
    # The first evaluation forked its own processes, then the spares for the second:
    # both spares were stopped while it timed. The second also had its own checker
    # (the spare it took, still without a request) stopped.
    assert len(seen[0]) == 2 and all(seen[0].values()), seen
    assert len(seen[1]) == 3 and all(seen[1].values()), seen
    for pid in warm.spares.waiting().values():
        assert _settles(pid, stopped=False)  # the next spares run once the timing is over


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
