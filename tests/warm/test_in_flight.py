"""Several evaluations in flight: they overlap, their timing never does, verdicts hold.

A trainer sends many new candidates at once; the evaluator runs them side by side (their
processes compile and check concurrently) while the gate lets one candidate process of a
device time at a time and stops every other evaluation's processes meanwhile.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from aka.eval._pipeline import Verdict, run_job
from aka.eval._workers import Workers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "redteam"))
from redteam_corpus import ALL, CORPUS, scale_job

HONEST = (CORPUS / "honest_vectorized.py").read_text()
# One honest and two caught candidates: verdicts of every kind must survive the overlap.
MIXED = ["honest_vectorized", "p04_timer_patch", "p14_channel_write"]


def _watch(workers: Workers) -> list[tuple[str, int, float]]:
    """Record when the gate grants the device and when its timer hands it over (its last
    sample taken, or the process gone)."""
    log: list[tuple[str, int, float]] = []
    gate, lock = workers.gate, threading.Lock()
    real_close, real_open, real_timed = gate.close, gate.open, gate.timed

    def close(device: str, pid: int, grant: Callable[[], None]) -> None:
        def granted() -> None:
            with lock:
                log.append(("start", pid, time.monotonic()))
            grant()

        real_close(device, pid, granted)

    def ended(real: Callable[[str, int], None]) -> Callable[[str, int], None]:
        def end(device: str, pid: int) -> None:
            # Logged before the hand-over: it grants the next waiting candidate at once,
            # whose "start" must not land ahead of this "end".
            if gate.timer(device) == pid:
                with lock:
                    log.append(("end", pid, time.monotonic()))
            real(device, pid)

        return end

    gate.close = close  # type: ignore[method-assign]
    gate.open, gate.timed = ended(real_open), ended(real_timed)  # type: ignore[method-assign]
    return log


def _key(v: Verdict) -> tuple[bool, list[str]]:
    return v.correct, sorted(v.flags)


@pytest.mark.usefixtures("no_clean_baseline")
def test_in_flight_evaluations_overlap_and_time_one_at_a_time(tmp_path: Path, warm: Workers
                                                              ) -> None:  # fmt: skip
    log = _watch(warm)
    spans: list[tuple[float, float]] = []

    def one(i: int) -> Verdict:
        job, root = scale_job(tmp_path / str(i), HONEST, seed=20 + i)
        t0 = time.monotonic()
        verdict = run_job(job, root, workers=warm)
        spans.append((t0, time.monotonic()))
        return verdict

    with ThreadPoolExecutor(max_workers=3) as pool:
        verdicts = list(pool.map(one, range(3)))
    assert all(v.correct for v in verdicts), [v.error for v in verdicts]
    # They were in flight together (else this test would prove nothing) ...
    first_end = min(end for _, end in spans)
    assert sum(start < first_end for start, _ in spans) >= 2
    # ... and the device was granted to one timing candidate at a time, each once.
    kinds = [k for k, _, _ in log]
    assert kinds == ["start", "end"] * 3, log
    assert len({pid for _, pid, _ in log}) == 3
    # Checkers' exits are reaped in the background; once they are, nothing is left active.
    deadline = time.monotonic() + 30
    while warm.gate.active("cpu") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not warm.gate.closed("cpu") and warm.gate.active("cpu") == set()


def test_verdicts_in_flight_equal_one_at_a_time(tmp_path: Path, warm: Workers) -> None:
    entries = {e.name: e for e in ALL if e.name in MIXED}

    def one(args: tuple[str, str]) -> tuple[bool, list[str]]:
        name, where = args
        job, root = scale_job(tmp_path / where / name, (CORPUS / f"{name}.py").read_text(), seed=7)
        return _key(run_job(job, root, workers=warm))

    serial = [one((n, "serial")) for n in MIXED]
    with ThreadPoolExecutor(max_workers=len(MIXED)) as pool:
        flight = list(pool.map(one, [(n, "flight") for n in MIXED]))
    assert flight == serial
    assert [ok for ok, _ in serial] == [entries[n].honest for n in MIXED]


def test_bench_distinct_reports_a_stream_and_agreeing_verdicts(cli: Callable[..., Any]) -> None:
    res = cli("bench", "eval", "--device", "cpu", "--distinct", "2", "--in-flight", "2",
              "--tasks", "2", "--max-time-s", "0.05", "--format", "json")  # fmt: skip
    assert res.code == 0, res.err
    report = json.loads(res.out)
    assert report["verdicts_identical"] is True
    assert report["max_time_s"] == 0.05
    flight = report["in_flight_pass"]
    # What held the device alone: the timing stage of every candidate.
    held = sum(r["stage_s"].get("timing", 0.0) for r in flight["runs"])
    assert flight["device_held_s"] == round(held, 3) > 0
    assert flight["in_flight"] == 2 and flight["candidates"] == 2
    # Two tasks' first variants: distinct sources, each evaluated in every pass.
    assert len({(r["task"], json.dumps(r["values"])) for r in flight["runs"]}) == 2
    # Where each candidate's time went, and the medians over the pass.
    assert all({"correctness", "gate", "timing", "checker"} <= set(r["stage_s"])
               for r in flight["runs"])  # fmt: skip
    assert set(flight["stage_median_s"]) >= {"compile", "gate", "timing", "checker"}
    # What admission reads of the device's memory, and how long one reading takes (none
    # on the CPU): every start beside others waits for one.
    assert flight["memory_probe"]["free_fraction"] is None
    assert 0 <= flight["memory_probe"]["seconds"] < 5
    # How busy the host's cores were: tells a CPU-bound pass from one that waits.
    assert 0 < flight["host_cpu_busy"] <= 1
    # ...and how much of it was the evaluator's own process (one interpreter, one GIL).
    assert 0 < flight["evaluator_cpu_share"] <= (os.cpu_count() or 1)
    too_many = cli("bench", "eval", "--device", "cpu", "--distinct", "100000", "--tasks", "1")
    assert too_many.code == 2 and "distinct variants" in too_many.err


def test_bench_distinct_sweeps_further_depths_with_new_digests() -> None:
    from aka.cli._bench_distinct import render, run_distinct

    report = run_distinct("cpu", distinct=2, in_flight=2, tasks=2, max_time_s=0.05,
                          in_flight_first=True, sweep=(1,), warm_up=True)  # fmt: skip
    swept = report["in_flight_1"]
    assert swept["in_flight"] == 1 and swept["candidates"] == 2
    assert [r["correct"] for r in swept["runs"]] == [r["correct"] for r in report["serial"]["runs"]]
    assert "in_flight_1    " in render(report)
    # The warm-up took one variant of each task, uncounted by the passes after it.
    warm = report["warm_up"]
    assert sorted(r["task"] for r in warm["runs"]) == sorted(
        r["task"] for r in report["serial"]["runs"]
    )
    # Each pass's speedups against the serial pass's, variant by variant.
    assert all(r["speedup"] > 0 for r in report["serial"]["runs"])
    agree = report["speedup_agreement"]
    assert set(agree) == {"in_flight_pass", "in_flight_1", "cached"}
    assert all(v is not None and v >= 0 for v in agree.values())


def test_bench_distinct_keeps_a_reserve_of_processes_started_ahead(
    cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--reserve K`` keeps K times the evaluations in flight of each process started
    ahead, so that the evaluations after the first wave take spares started a wave
    earlier; each pass reports the depth it prepared."""
    from aka.cli import _bench_distinct

    asked: list[int] = []
    monkeypatch.setattr(
        Workers, "prepare", lambda self, device, isolate, depth, **kw: asked.append(depth) or True
    )
    monkeypatch.setattr(
        _bench_distinct,
        "evaluate_variant",
        lambda *a, **kw: {
            "wall_s": 0.2,
            "kernel_s": 0.01,
            "speedup": 1.0,
            "correct": True,
            "flags": [],
            "error": None,
            "stage_s": {"timing": 0.1},
            "again_alone": False,
        },
    )
    report = _bench_distinct.run_distinct("cpu", distinct=2, in_flight=2, tasks=2, reserve=3)
    assert report["reserve"] == 3
    assert report["in_flight_pass"]["prepared"] == 6 and report["serial"]["prepared"] == 3
    assert asked == [3, 6, 3]  # serial, in flight, cached
    assert "in flight 2 (prepared 6)" in _bench_distinct.render(report)
    with pytest.raises(ValueError, match="reserve"):
        _bench_distinct.run_distinct("cpu", distinct=2, in_flight=2, tasks=2, reserve=0)
    refused = cli("bench", "eval", "--device", "cpu", "--distinct", "2", "--reserve", "0")
    assert refused.code == 2 and "--reserve" in refused.err


def test_busy_fraction_reads_the_share_of_busy_ticks() -> None:
    from aka.cli._bench_distinct import busy_fraction, host_cpu

    assert busy_fraction((100, 1000), (400, 2000)) == 0.3
    assert busy_fraction(None, (1, 2)) is None and busy_fraction((5, 10), (5, 10)) is None
    now = host_cpu()
    assert now is not None and 0 <= now[0] <= now[1]


def test_an_evaluation_alone_waits_for_the_device_and_holds_it() -> None:
    """``alone`` waits until the evaluations in flight end, and none starts beside it;
    each says afterwards whether another ran on its device meanwhile."""
    workers = Workers()
    order: list[str] = []
    first_in, release_first = threading.Event(), threading.Event()

    def first() -> bool:
        with workers.evaluating("dev") as share:
            first_in.set()
            release_first.wait(10)
            order.append("first ends")
        return share.crowded

    def alone() -> bool:
        with workers.evaluating("dev", alone=True) as share:
            order.append("alone runs")
            time.sleep(0.2)
            order.append("alone ends")
        return share.crowded

    def later() -> bool:
        with workers.evaluating("dev") as share:
            order.append("later runs")
        return share.crowded

    with ThreadPoolExecutor(max_workers=3) as pool:
        a = pool.submit(first)
        assert first_in.wait(10)
        b = pool.submit(alone)
        time.sleep(0.2)  # the alone one is waiting now: a later one must queue behind it
        c = pool.submit(later)
        time.sleep(0.2)
        assert order == []
        with workers.evaluating("other-device") as other:  # another device is not held
            pass
        release_first.set()
        crowded = a.result(10), b.result(10), c.result(10)
    assert order == ["first ends", "alone runs", "alone ends", "later runs"]
    assert crowded == (False, False, False) and not other.crowded
    # Two that overlap were each crowded, the one started first too.
    with workers.evaluating("dev") as one, workers.evaluating("dev") as two:
        pass
    assert one.crowded and two.crowded
    assert workers.in_flight("dev") == 0


def test_a_verdict_short_of_memory_beside_others_is_evaluated_again_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aka.eval import _pipeline

    def verdict(error: str | None, flags: list[str]) -> Verdict:
        return Verdict(compiled={"ok": True}, cases=[], timing=[], device={}, flags=flags,
                       evidence=[], correct=not error and not flags, error=error,
                       network="none")  # fmt: skip

    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB."
    results: list[tuple[Verdict, bool]] = []
    calls: list[bool] = []

    def evaluate(job: Any, root: Path, workers: Any, split: bool, *, alone: bool
                 ) -> tuple[Verdict, bool]:  # fmt: skip
        calls.append(alone)
        return results.pop(0)

    monkeypatch.setattr(_pipeline, "_evaluate", evaluate)
    # Out of memory beside others: evaluated again alone, and that verdict stands.
    results[:] = [(verdict(oom, []), True), (verdict(None, []), False)]
    got = run_job(None, tmp_path)  # type: ignore[arg-type]
    assert calls == [False, True] and got.correct
    assert got.notes == ["evaluated again with the device to itself: beside other "
                         "evaluations it ran out of device memory"]  # fmt: skip
    # Flagged only for what memory pressure can cause: again; alone it is flagged again.
    calls.clear()
    results[:] = [(verdict(None, ["uninitialized_read"]), True),
                  (verdict(None, ["uninitialized_read"]), False)]  # fmt: skip
    got = run_job(None, tmp_path)  # type: ignore[arg-type]
    assert calls == [False, True] and got.flags == ["uninitialized_read"]
    # Alone already, or caught for anything else: the first verdict stands.
    for first in [(verdict(oom, []), False),
                  (verdict(None, ["uninitialized_read", "timer_tamper"]), True),
                  (verdict("correctness: 12 mismatched elements", []), True)]:  # fmt: skip
        calls.clear()
        results[:] = [first]
        assert run_job(None, tmp_path) is first[0]  # type: ignore[arg-type]
        assert calls == [False]


def test_an_evaluation_beside_others_waits_for_the_device_s_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a GPU with too little memory free, a second evaluation waits to start while
    another runs; alone on the device, or once memory is free, it starts at once."""
    from aka.eval import _workers
    from aka.eval._memory import ADMIT_FREE

    monkeypatch.setattr(_workers, "ADMIT_POLL_S", 0.02)
    free = {"cuda:0": ADMIT_FREE / 2}
    asked: list[str] = []

    def probe(device: str) -> float | None:
        asked.append(device)
        return free.get(device)

    workers = Workers(free=probe)
    with workers.evaluating("cuda:0"):  # alone: no memory asked for
        pass
    assert asked == []
    started = threading.Event()

    def second() -> None:
        with workers.evaluating("cuda:0"):
            started.set()

    with workers.evaluating("cuda:0"):
        t = threading.Thread(target=second)
        t.start()
        assert not started.wait(0.3)  # waiting for memory
        with workers.evaluating("cpu"):  # another device does not wait behind it
            pass
        free["cuda:0"] = ADMIT_FREE * 2
        assert started.wait(5)
    t.join(5)
    assert set(asked) == {"cuda:0"} and workers.in_flight("cuda:0") == 0


def test_waiting_to_start_and_settling_the_verdict_are_stages_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream's wall time is accounted for: what an evaluation waits before its
    processes start beside others (``admit``: the device's memory) and what the verdict
    does after them (``settle``) are stages, disjoint from the processes' own."""
    from aka.eval import _workers

    monkeypatch.setattr(_workers, "ADMIT_POLL_S", 0.02)
    low = {"on": True}
    workers = Workers(free=lambda device: 0.01 if low["on"] else 0.9)
    job, root = scale_job(tmp_path / "eval", HONEST, seed=7)
    try:
        with workers.evaluating(job.device):  # another evaluation holds the memory...
            late = ThreadPoolExecutor(max_workers=1).submit(
                lambda: (time.perf_counter(), run_job(job, root, workers=workers))
            )
            time.sleep(0.6)
            low["on"] = False  # ...until it gives it back
        began, verdict = late.result(timeout=300)
        wall = time.perf_counter() - began
    finally:
        workers.shutdown()
    stages = verdict.stage_s
    assert verdict.correct, verdict.error
    assert {"admit", "start", "correctness", "checker", "settle"} <= set(stages)
    assert stages["admit"] >= 0.5 and stages["settle"] >= 0
    assert sum(stages.values()) <= wall + 1e-6


def test_the_bench_reads_the_memory_probe_as_admission_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from aka.cli import _bench_distinct

    asked: list[str] = []

    def probe(device: str) -> float:
        asked.append(device)
        time.sleep(0.05)
        return 0.123456

    monkeypatch.setattr(_bench_distinct, "gpu_free_fraction", probe)
    got = _bench_distinct.memory_probe("cuda:0")
    assert asked == ["cuda:0"]
    assert got["free_fraction"] == 0.123 and got["seconds"] is not None
    assert got["seconds"] >= 0.05
