"""Claims: O_EXCL leases, heartbeats, expiry, takeover and release, with real processes."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aka.claims import _encode
from aka_runners import claim_next, claims_dir, key_state, read_leases

CTX = mp.get_context("fork")


def test_first_claim_wins_and_blocks_others(tmp_path: Path) -> None:
    a = claim_next(tmp_path, "r", ["k1", "k2"], "A", 30)
    b = claim_next(tmp_path, "r", ["k1", "k2"], "B", 30)
    c = claim_next(tmp_path, "r", ["k1", "k2"], "C", 30)
    assert a is not None and b is not None
    assert (a.key, b.key) == ("k1", "k2")
    assert c is None
    assert key_state(tmp_path, "r", "k1") == "held"


def test_release_done_skips_tag_but_next_tag_is_claimable(tmp_path: Path) -> None:
    with claim_next(tmp_path, "r", ["k"], "A", 30, tags={"k": "1"}) as claim:
        assert claim.try_number == 1
    assert key_state(tmp_path, "r", "k", "1") == "done"
    assert claim_next(tmp_path, "r", ["k"], "B", 30, tags={"k": "1"}) is None
    retry = claim_next(tmp_path, "r", ["k"], "B", 30, tags={"k": "2"})
    assert retry is not None and retry.try_number == 2


def test_exception_releases_without_done(tmp_path: Path) -> None:
    claim = claim_next(tmp_path, "r", ["k"], "A", 30)
    assert claim is not None
    with pytest.raises(RuntimeError), claim:
        raise RuntimeError("boom")
    assert key_state(tmp_path, "r", "k") == "free"
    again = claim_next(tmp_path, "r", ["k"], "B", 30)
    assert again is not None and again.try_number == 2


def test_expired_lease_is_taken_over_as_next_try(tmp_path: Path) -> None:
    dead = claim_next(tmp_path, "r", ["k"], "A", 2.0)  # long enough for a loaded machine
    assert dead is not None  # never heartbeats: a holder that died
    assert claim_next(tmp_path, "r", ["k"], "B", 30) is None
    time.sleep(2.1)
    taker = claim_next(tmp_path, "r", ["k"], "B", 30)
    assert taker is not None and taker.try_number == 2
    assert [(lease.try_number, lease.worker_id) for lease in read_leases(tmp_path, "r", "k")] == [
        (1, "A"),
        (2, "B"),
    ]


def test_heartbeat_keeps_lease_alive_past_ttl(tmp_path: Path) -> None:
    with claim_next(tmp_path, "r", ["k"], "A", 0.3):
        time.sleep(0.8)
        assert claim_next(tmp_path, "r", ["k"], "B", 0.3) is None


def test_holder_learns_it_lost_the_lease(tmp_path: Path) -> None:
    slow = claim_next(tmp_path, "r", ["k"], "A", 0.1)
    assert slow is not None
    time.sleep(0.2)
    assert claim_next(tmp_path, "r", ["k"], "B", 30) is not None
    assert slow.heartbeat() is False
    assert slow.lost.is_set()


def test_max_tries_stops_a_poison_attempt(tmp_path: Path) -> None:
    for _ in range(2):
        c = claim_next(tmp_path, "r", ["k"], "A", 30, max_tries=2)
        assert c is not None
        c.release(done=False)
    assert claim_next(tmp_path, "r", ["k"], "A", 30, max_tries=2) is None


def test_bad_ttl_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ttl_s"):
        claim_next(tmp_path, "r", ["k"], "A", 0)


@given(st.lists(st.text(max_size=12), min_size=2, max_size=8, unique=True))
def test_key_encoding_is_injective_and_file_safe(names: list[str]) -> None:
    encoded = [_encode(n) for n in names]
    assert len(set(encoded)) == len(names)
    for e in encoded:
        assert e and "/" not in e and "\x00" not in e and e not in {".", ".."}


def _racer(root: str, keys: list[str], worker: str, log: str) -> None:
    while True:
        claim = claim_next(Path(root), "run", keys, worker, 5.0)
        if claim is None:
            return
        with claim:
            fd = os.open(log, os.O_WRONLY | os.O_APPEND)
            os.write(fd, f"{claim.key}\t{worker}\t{time.time()}\n".encode())
            os.close(fd)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(workers=st.integers(2, 6), n_keys=st.integers(1, 24))
def test_racing_processes_never_double_claim(tmp_path: Path, workers: int, n_keys: int) -> None:
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    log = root / "log"
    log.touch()
    keys = [f"task/{i}#arm#0" for i in range(n_keys)]
    procs = [
        CTX.Process(target=_racer, args=(str(root), keys, f"w{i}", str(log)))
        for i in range(workers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    lines = log.read_text().splitlines()
    assert sorted(line.split("\t")[0] for line in lines) == sorted(keys)
    for key in keys:
        assert key_state(root, "run", key) == "done"


def _hold_forever(root: str, ready: str) -> None:
    claim = claim_next(Path(root), "run", ["k"], "victim", 0.5)
    assert claim is not None
    claim.start()
    Path(ready).touch()
    time.sleep(600)


def _steal(root: str, worker: str, log: str) -> None:
    deadline = time.time() + 1.5
    while time.time() < deadline:
        claim = claim_next(Path(root), "run", ["k"], worker, 30)
        if claim is not None:
            fd = os.open(log, os.O_WRONLY | os.O_APPEND)
            os.write(fd, f"{worker}\t{claim.try_number}\n".encode())
            os.close(fd)
            claim.start()
            # Alive until every stealer has given up: a holder that exits is gone, and a
            # gone holder's lease on this host is free at once.
            time.sleep(deadline - time.time() + 0.5)
            return
        time.sleep(0.01)


@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(stealers=st.integers(2, 8))
def test_killed_holder_lease_is_taken_exactly_once(tmp_path: Path, stealers: int) -> None:
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    ready, log = root / "ready", root / "log"
    log.touch()
    victim = CTX.Process(target=_hold_forever, args=(str(root), str(ready)))
    victim.start()
    while not ready.exists():
        time.sleep(0.01)
    time.sleep(0.6)  # past one TTL: the heartbeat has kept it alive
    assert key_state(root, "run", "k") == "held"
    assert victim.pid is not None
    os.kill(victim.pid, signal.SIGKILL)
    victim.join()
    procs = [
        CTX.Process(target=_steal, args=(str(root), f"s{i}", str(log))) for i in range(stealers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    winners = log.read_text().splitlines()
    assert len(winners) == 1 and winners[0].endswith("\t2")
    assert [lease.try_number for lease in read_leases(root, "run", "k")] == [1, 2]
    assert claims_dir(root, "run").is_dir()


def _lease_doc(path: Path, **changes: object) -> None:
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))


def _dead_pid() -> int:
    proc = CTX.Process(target=time.sleep, args=(0,))
    proc.start()
    proc.join()
    assert proc.pid is not None
    return proc.pid


def test_a_gone_holder_on_this_host_frees_its_lease_at_once(tmp_path: Path) -> None:
    claim = claim_next(tmp_path, "r", ["k"], "A", 3600)
    assert claim is not None
    _lease_doc(claim.path, pid=_dead_pid())
    assert key_state(tmp_path, "r", "k") == "free"
    taker = claim_next(tmp_path, "r", ["k"], "B", 30)
    assert taker is not None and taker.try_number == 2


@pytest.mark.parametrize(
    "other",
    [{"host": "elsewhere"}, {"pidns": "pid:[1]"}, {"boot": "another-boot"}, {"host": None}],
)
def test_a_holder_that_may_live_elsewhere_keeps_its_lease_until_expiry(
    tmp_path: Path, other: dict[str, object]
) -> None:
    claim = claim_next(tmp_path, "r", ["k"], "A", 3600)
    assert claim is not None
    _lease_doc(claim.path, pid=_dead_pid(), **other)
    assert key_state(tmp_path, "r", "k") == "held"
    assert claim_next(tmp_path, "r", ["k"], "B", 30) is None


def test_a_lease_is_never_visible_before_its_content(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A racing reader (a second ``aka resume``) met the lease empty and refused with
    "pid ? on host ?": the lease now appears under its name only once written."""
    import json

    from aka import claims

    seen: list[bool] = []
    real_dump = json.dump

    def spying_dump(obj, fh, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(claims._lease_path(tmp_path, 1).exists())
        return real_dump(obj, fh, *args, **kwargs)

    monkeypatch.setattr(claims.json, "dump", spying_dump)
    payload = {"worker_id": "w1", "expires_at": 1e12, "host": "h", "pid": 7}
    assert claims._try_create(tmp_path, 1, payload)
    assert seen == [False]
    assert claims._read_lease(tmp_path, 1).pid == 7
    assert not claims._try_create(tmp_path, 1, {**payload, "worker_id": "w2"})  # taken
    assert claims._read_lease(tmp_path, 1).worker_id == "w1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["try-0001.lease"]  # no temporaries
