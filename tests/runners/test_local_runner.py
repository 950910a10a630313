"""The worker loop and the local runner, with real processes and the file stand-in."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import runners_standin as standin

from aka.errors import InputError
from aka_runners import (
    detect_device,
    key_state,
    launch,
    load_source_factory,
    parse_gpus,
    read_leases,
    run_local,
    run_worker,
    start_local,
)

SOURCE = "runners_standin:make"
pytestmark = pytest.mark.usefixtures("standin_path")


def _scored(ledger: Path) -> Counter[str]:
    return Counter(e[1] for e in standin.read_events(ledger) if e[0] == "scored")


def test_threads_share_work_and_score_each_attempt_once(tmp_path: Path) -> None:
    standin.setup(tmp_path, {f"t{i}": 0.01 for i in range(30)})
    reports = []

    def one(i: int) -> None:
        src = standin.make(tmp_path, "r", f"w{i}")
        reports.append(run_worker(tmp_path, "r", src, worker_id=f"w{i}", lease_ttl_s=5))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _scored(tmp_path) == Counter({f"t{i}": 1 for i in range(30)})
    assert sum(len(r.executed) for r in reports) == 30
    assert all(0 < r.utilization <= 1 for r in reports if r.executed)


def test_stale_plan_never_reruns_a_finished_attempt(tmp_path: Path) -> None:
    standin.setup(tmp_path, {"a": 0.0})
    src = standin.make(tmp_path, "r", "w")
    stale = src.pending()
    run_worker(tmp_path, "r", src, worker_id="w1", lease_ttl_s=5)

    class Stale:
        def pending(self):  # first look is stale, the re-read after claiming is fresh
            self.pending = src.pending  # type: ignore[method-assign]
            return stale

        def execute(self, plan, *, device, worker_id):  # pragma: no cover - must not run
            raise AssertionError("ran a finished attempt")

    assert run_worker(tmp_path, "r", Stale(), worker_id="w2", lease_ttl_s=5).executed == []


def test_execute_error_releases_the_lease_and_propagates(tmp_path: Path) -> None:
    standin.setup(tmp_path, {"a": 0.0})

    class Broken(standin.StandinSource):
        def execute(self, plan, *, device, worker_id):
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        run_worker(tmp_path, "r", Broken(tmp_path, "r", "w"), worker_id="w", lease_ttl_s=30)
    assert key_state(tmp_path, "r", "a", "1") == "free"


def test_order_decides_what_is_claimed_first(tmp_path: Path) -> None:
    standin.setup(tmp_path, {"short": 0.0, "long": 0.05})
    src = standin.make(tmp_path, "r", "w")
    longest_first = lambda plans: sorted(plans, key=lambda p: -p.seconds)  # noqa: E731
    report = run_worker(tmp_path, "r", src, worker_id="w", lease_ttl_s=5, order=longest_first)
    assert report.executed == ["long", "short"]


def test_parse_gpus() -> None:
    assert parse_gpus("0,1,3") == [0, 1, 3]
    for bad in ["", "a", "0,0", "-1"]:
        with pytest.raises(InputError, match="--gpus"):
            parse_gpus(bad)


def test_bad_source_spec_is_an_input_error() -> None:
    with pytest.raises(InputError, match="bad source"):
        load_source_factory("no_colon")
    with pytest.raises(InputError, match="cannot load"):
        load_source_factory("no_such_module_xyz:make")


def test_local_cpu_workers_split_the_run(tmp_path: Path) -> None:
    standin.setup(tmp_path, {f"t{i}": 0.05 for i in range(12)})
    summaries = run_local("r", tmp_path, workers=3, lease_ttl_s=2, source=SOURCE)
    assert all(s is not None for s in summaries)
    assert sum(int(s["executed"]) for s in summaries if s) == 12
    assert _scored(tmp_path) == Counter({f"t{i}": 1 for i in range(12)})
    workers = {e[2] for e in standin.read_events(tmp_path)}
    assert workers <= {"local-cpu0", "local-cpu1", "local-cpu2"} and len(workers) >= 2


def test_gpu_workers_are_pinned_one_gpu_each(tmp_path: Path) -> None:
    # No GPU here: the pinned workers must fail preflight (device cuda) before any claim.
    standin.setup(tmp_path, {"a": 0.0})
    started = start_local("r", tmp_path, gpus=[0, 1], lease_ttl_s=5, source=SOURCE)
    assert [w.worker_id for w in started] == ["local-gpu0", "local-gpu1"]
    results = [w.wait() for w in started]
    pinned = [(tmp_path / "standin" / f"env-local-gpu{g}").read_text() for g in (0, 1)]
    assert pinned == ["0", "1"]
    if detect_device().kind == "cpu":
        assert results == [None, None]
        assert not (tmp_path / "sidecar" / "claims").exists()


def test_killed_local_worker_attempt_is_retried_once(tmp_path: Path) -> None:
    standin.setup(tmp_path, {"slow": 3.0, **{f"t{i}": 0.05 for i in range(4)}})
    victim = start_local("r", tmp_path, workers=1, lease_ttl_s=1, source=SOURCE)[0]
    while not any(e[:2] == ("start", "slow") for e in standin.read_events(tmp_path)):
        time.sleep(0.02)
    os.kill(victim.process.pid, signal.SIGKILL)
    victim.process.wait()
    standin.setup(tmp_path, {"slow": 0.05, **{f"t{i}": 0.05 for i in range(4)}})
    summaries = run_local("r", tmp_path, workers=2, lease_ttl_s=1, source=SOURCE)
    assert all(s is not None for s in summaries)
    scored = _scored(tmp_path)
    assert scored == Counter({"slow": 1, **{f"t{i}": 1 for i in range(4)}})
    tries = [lease.worker_id for lease in read_leases(tmp_path, "r", "slow")]
    assert tries[0] == "local-cpu0" and len(tries) >= 2
    starts = [e for e in standin.read_events(tmp_path) if e[:2] == ("start", "slow")]
    assert [e[3] for e in starts] == [1, 2]


def test_launch_local_and_bad_runner_settings(tmp_path: Path) -> None:
    standin.setup(tmp_path, {"a": 0.0, "b": 0.0})
    result = launch("r", tmp_path, runner="local", workers=2, lease_ttl_s=2, source=SOURCE)
    assert result.runner == "local" and len(result.summaries) == 2
    assert _scored(tmp_path) == Counter({"a": 1, "b": 1})
    with pytest.raises(InputError, match="unknown runner"):
        launch("r", tmp_path, runner="k8s")
    with pytest.raises(InputError, match="needs an image"):
        launch("r", tmp_path, runner="docker")


def test_sigterm_releases_the_lease_at_once(tmp_path: Path) -> None:
    standin.setup(tmp_path, {"slow": 30.0})
    [worker] = start_local("r", tmp_path, workers=1, lease_ttl_s=600, source=SOURCE)
    while not any(e[:2] == ("start", "slow") for e in standin.read_events(tmp_path)):
        time.sleep(0.02)
    assert key_state(tmp_path, "r", "slow", "1") == "held"
    worker.process.send_signal(signal.SIGTERM)
    assert worker.wait() is None and worker.process.returncode == 128 + signal.SIGTERM
    assert key_state(tmp_path, "r", "slow", "1") == "free"  # no 600 s wait for a takeover
