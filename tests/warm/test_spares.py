"""Spare prepared processes, the zygote's preloads and evaluation profiles.

With warm workers on, the evaluator starts the next evaluation's candidate and checker
processes once the current candidate process has started (the timing gate stops them
while it times: test_gate.py); the next evaluation must run in them, in its own working
directory and with its own kernel cache, and a spare must never serve a second
evaluation or one with other settings.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from aka.eval import _profiling, _warm
from aka.eval._pipeline import Job, run_job
from aka.eval._proc import Proc
from aka.eval._spares import MODULES
from aka.eval._switches import Switches
from aka.eval._workers import Workers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "redteam"))
from redteam_corpus import CORPUS, scale_job

TIMING = {"target_rel_ci": 0.05, "max_time_s": 0.1, "min_samples": 5}
# The evaluation runs in a child of the process the evaluator started (its reaper).
WHERE = """import os

raise RuntimeError(
    f"pid={os.getppid()} cwd={os.getcwd()} cache={os.environ.get('TRITON_CACHE_DIR')}"
)
"""


@pytest.fixture(autouse=True)
def host_pids() -> bool:
    """These tests tell processes apart by the pid candidate code reports, which a PID
    namespace would make 1 for all (containment is tested in tests/redteam)."""
    return True


def _job_in(tmp: Path, candidate: str, *, isolate: bool = False) -> tuple[Job, Path]:
    return scale_job(tmp, candidate, seeds=1, seed=3, timing=dict(TIMING), isolate_network=isolate)


def _where(error: str | None) -> dict[str, str]:
    assert error and "pid=" in error, error
    text = error.split("pid=", 1)[1]
    pid, rest = text.split(" cwd=", 1)
    cwd, cache = rest.split(" cache=", 1)
    return {"pid": pid, "cwd": cwd, "cache": cache.split(")")[0].split(" (at")[0]}


def _gone(pid: int, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_the_next_evaluation_runs_in_the_spare_started_for_it(tmp_path: Path, warm: Workers
                                                              ) -> None:  # fmt: skip
    first_job, first_root = _job_in(tmp_path / "a", WHERE)
    first = _where(run_job(first_job, first_root, workers=warm).compiled.get("error"))
    spares = {m: pids[0] for m, pids in warm.spares.waiting().items()}
    assert set(spares) == set(MODULES)
    assert str(spares["aka.eval._candidate"]) != first["pid"]

    job, root = _job_in(tmp_path / "b", WHERE + "# another tree\n")
    cache = _warm.cache_env("aka.eval._candidate", root / "cand")["TRITON_CACHE_DIR"]
    second = _where(run_job(job, root, workers=warm).compiled.get("error"))
    # The candidate ran in the spare, in this evaluation's folder, with this tree's cache.
    assert second["pid"] == str(spares["aka.eval._candidate"])
    assert second["cwd"] == str(root / "scratch")
    assert second["cache"] == cache != first["cache"]
    # The candidate spare was used up and a new one waits for the evaluation after; the
    # checker, never asked (no output to check), waits again (test_checker_reuse.py).
    after = warm.spares.waiting()
    assert set(after) == set(MODULES)
    assert all(len(pids) == 1 for pids in after.values())  # a serial evaluator keeps one
    assert after["aka.eval._candidate"] != [spares["aka.eval._candidate"]]
    assert after["aka.eval._checker"] == [spares["aka.eval._checker"]]


def test_a_candidate_gets_its_request_before_its_successors_are_forked(
    tmp_path: Path, warm: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The zygote forks one process at a time, so the spares an evaluation starts for
    the next ones are forked behind its own candidate's request, not before it; they
    still wait, ready, once the evaluation returns."""
    honest = (CORPUS / "honest_vectorized.py").read_text()
    job, root = _job_in(tmp_path / "a", honest)
    assert run_job(job, root, workers=warm).correct
    fork = warm.spares._factory

    def slow_fork(module: str, device: str, isolate: bool) -> Proc:
        time.sleep(1.5)  # as a zygote busy with other evaluations' forks
        return fork(module, device, isolate)

    monkeypatch.setattr(warm.spares, "_factory", slow_fork)
    job, root = _job_in(tmp_path / "b", honest + "# another tree\n")
    verdict = run_job(job, root, workers=warm)
    assert verdict.correct, verdict.error
    assert verdict.stage_s["start"] < 1.0, verdict.stage_s  # not the two forks' 3 s
    assert {m: len(p) for m, p in warm.spares.waiting().items()} == {m: 1 for m in MODULES}


def test_a_spare_serves_only_its_own_settings_and_only_alive(warm: Workers) -> None:
    spares = warm.spares
    spares.refill("cpu", False)
    pids = spares.waiting()
    assert spares.take("aka.eval._candidate", "cpu", True) is None  # other isolation setting
    assert _gone(pids["aka.eval._candidate"][0])  # and that spare is stopped, not leaked

    spares.refill("cpu", False)
    pid = spares.waiting()["aka.eval._checker"][0]
    os.kill(pid, signal.SIGKILL)
    assert _gone(pid)
    assert spares.take("aka.eval._checker", "cpu", False) is None  # dead: not handed out

    spares.refill("cpu", False)
    proc = spares.take("aka.eval._checker", "cpu", False)
    assert proc is not None and proc.alive() and proc.prepared is False
    proc.kill()


def test_as_many_spares_wait_as_evaluations_are_in_flight(warm: Workers) -> None:
    """Eight evaluations in flight each need their processes when they start: with one
    spare per module, all but the first forked their own and paid the start-up."""
    with contextlib.ExitStack() as stack:
        for _ in range(3):
            stack.enter_context(warm.evaluating("cpu"))
        assert warm.in_flight("cpu") == 3 and warm.in_flight("cuda:0") == 0
        warm.refill("cpu", False)
        pids = warm.spares.waiting()
        assert {m: len(p) for m, p in pids.items()} == {m: 3 for m in MODULES}
        # Three evaluations start: each takes a different spare, oldest first.
        taken = [warm.spares.take("aka.eval._candidate", "cpu", False) for _ in range(4)]
        assert [t.proc.pid if t else None for t in taken] == [*pids["aka.eval._candidate"], None]
        for proc in taken:
            if proc is not None:
                proc.kill()
        warm.refill("cpu", False)  # topped up again, the checkers left as they were
        again = warm.spares.waiting()
        assert again["aka.eval._checker"] == pids["aka.eval._checker"]
        assert len(again["aka.eval._candidate"]) == 3
    assert warm.in_flight("cpu") == 0
    warm.refill("cpu", False)  # the load fell: the spares already waiting stay for the next
    assert {m: len(p) for m, p in warm.spares.waiting().items()} == {m: 3 for m in MODULES}


def test_a_prepared_depth_waits_before_the_first_burst_and_after_it(warm: Workers) -> None:
    """A caller that sends bursts of four (a trainer's batch) prepares four of each process
    before the first: the evaluations starting beside the first find theirs waiting, and
    every refill after tops up to four, whatever the load at the time."""
    assert warm.prepare("cpu", False, 4, wait_s=120)  # and every one has started
    assert warm.in_flight("cpu") == 0
    pids = warm.spares.waiting()
    assert {m: len(p) for m, p in pids.items()} == {m: 4 for m in MODULES}
    taken = [warm.spares.take("aka.eval._candidate", "cpu", False) for _ in range(4)]
    assert all(t is not None for t in taken)
    for proc in taken:
        assert proc is not None
        proc.kill()
    with warm.evaluating("cpu"):  # one evaluation in flight: the refill still tops up to 4
        warm.refill("cpu", False)
    assert len(warm.spares.waiting()["aka.eval._candidate"]) == 4
    warm.prepare("cuda:0", False, 0)  # nothing asked: nothing started for that device
    assert sum(map(len, warm.spares.waiting().values())) == 8
    warm.spares.clear()


def test_refills_from_several_threads_never_pass_the_depth(
    warm: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[int] = []
    factory = warm.spares._factory

    def counted(module: str, device: str, isolate: bool) -> Proc:
        proc = factory(module, device, isolate)
        started.append(int(proc.proc.pid))
        return proc

    monkeypatch.setattr(warm.spares, "_factory", counted)
    threads = [threading.Thread(target=warm.spares.refill, args=("cpu", False, 2))
               for _ in range(4)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    waiting = warm.spares.waiting()
    assert {m: len(p) for m, p in waiting.items()} == {m: 2 for m in MODULES}
    kept = {p for pids in waiting.values() for p in pids}
    assert all(_gone(p) for p in set(started) - kept)  # one started past the depth is stopped
    warm.spares.clear()
    assert all(_gone(p) for p in kept)


def test_no_spares_without_warm_workers(tmp_path: Path) -> None:
    cold = Workers(Switches(warm=False, pid_namespace=False))
    try:
        job, root = _job_in(tmp_path, (CORPUS / "honest_vectorized.py").read_text())
        assert run_job(job, root, workers=cold).correct
        assert cold.spares.waiting() == {}
    finally:
        cold.shutdown()


def test_shutdown_stops_the_spares(tmp_path: Path, warm: Workers) -> None:
    job, root = _job_in(tmp_path, (CORPUS / "honest_vectorized.py").read_text(), isolate=True)
    verdict = run_job(job, root, workers=warm)
    assert verdict.correct, verdict.error
    pids = [p for waiting in warm.spares.waiting().values() for p in waiting]
    assert len(pids) == 2
    warm.shutdown()
    assert warm.spares.waiting() == {}
    assert all(_gone(p) for p in pids)


def test_the_zygote_does_the_shared_set_up_once(warm: Workers) -> None:
    status = warm.zygote_status("cpu")
    # Imported by torch.use_deterministic_algorithms in every poisoned run.
    assert {"torch._inductor.config", "aka.timing", "triton.runtime.cache"} <= set(
        status["modules"]
    )
    assert status["missing"] == []
    assert status["cuda_initialized"] is False


def test_profiles_name_what_each_process_spent_and_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "prof"
    monkeypatch.setenv(_profiling.PROFILE_ENV, str(folder))
    workers = Workers(Switches.from_env())  # the profile folder read from the environment
    job, root = _job_in(tmp_path, (CORPUS / "honest_vectorized.py").read_text())
    try:  # two evaluations: each candidate is PID 1 of its own namespace, yet keeps its file
        verdicts = [run_job(job, root, workers=workers) for _ in range(2)]
    finally:
        workers.shutdown()
    assert all(v.correct for v in verdicts), [v.error for v in verdicts]
    names = sorted(p.name.split("-")[0] for p in folder.glob("*.prof"))
    assert names == ["checker", "checker", "child", "child"]
    assert len(list(folder.glob("*.modules.json"))) == 4
    text = _profiling.summary(folder, top=5)
    assert "== child: 2 processes ==" in text and "== checker: 2 processes ==" in text
    assert "_candidate.py" in text  # the harness's own frames are in the child's profile
    with pytest.raises(FileNotFoundError, match=r"no \.prof files"):
        _profiling.summary(tmp_path)
