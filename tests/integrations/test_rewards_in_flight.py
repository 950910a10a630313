"""Several evaluations of one evaluator at once: what a trainer's batch and `aka serve` get.

A trainer sends a step's completions together; the evaluator scores up to its in-flight
limit of them at once. These tests check what must not change (each candidate's verdict
and score, one attempt per candidate with its sample, a ledger that verifies) and what
must (the evaluations overlapped, never more than the limit), read from the ledger: an
attempt is in flight from its ``AttemptStarted`` to its ``AttemptFinished``.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aka.api import Evaluator, Sample
from aka.config import TimingSettings
from aka.events import REGISTRY
from aka.integrations._scorer import close_shared
from aka_ledger import Envelope, Ledger

TASK = "torch/ops/affine"
TIMING = TimingSettings(max_time_s=0.2, min_samples=5)
# A policy whose score does not depend on the measured speed (1 for any correct
# candidate), so the scores of two evaluations of one candidate compare exactly.
POLICY = "fast_p:thresholds=0"
CORRECT = (
    "import torch\n\n\ndef affine(x):\n"
    "    return torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))\n"
)
WRONG = "import torch\n\n\ndef affine(x):\n    return x * 3\n"
GARBAGE = b"\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe garbage from a broken decoder"
NO_COMPILE = "import torch\n\ndef affine(x:\n    return x * 2 + 1\n"
FORBIDDEN = "import numpy\nimport torch\n\n\ndef affine(x):\n    return torch.from_numpy(numpy.asarray(x) * 2 + 1)\n"
BATCH: list[str | bytes] = [CORRECT, WRONG, GARBAGE, NO_COMPILE, FORBIDDEN]
PROSE = "I would fuse the multiply and the add; that should be about twice as fast."


@pytest.fixture(autouse=True)
def _close_scorers() -> Iterator[None]:
    yield
    close_shared()


def events(ledger_dir: Path, run_id: str) -> list[Envelope]:
    led = Ledger.open(ledger_dir, registry=REGISTRY)
    try:
        return led.events(run_id=run_id)
    finally:
        led.close()


def peak(evs: list[Envelope]) -> int:
    """The most attempts between their start and their finish at once, in ledger order."""
    running = most = 0
    for e in evs:
        running += {"AttemptStarted": 1, "AttemptFinished": -1}.get(e.type, 0)
        most = max(most, running)
    return most


def one_of_each(evs: list[Envelope], keys: list[str]) -> None:
    """Every attempt started, finished and was scored (or failed) exactly once."""
    for kind in ("AttemptPlanned", "AttemptStarted", "AttemptFinished"):
        assert Counter(e.attempt_key for e in evs if e.type == kind) == Counter(keys), kind


def verdict(r: Any) -> tuple[Any, ...]:
    """What must not depend on how many ran at once: the error less its temporary folder,
    its random seed and the size of the error that seed's inputs gave."""
    error = re.sub(r"aka-[\w-]+?-[a-z0-9_]{6,}", "TMP", r.error or "")
    error = re.sub(r"seed \d+: max abs error \S+", "seed S: max abs error E", error)
    return r.compiled, r.correct, sorted(r.hack_flags), r.reward, error


def test_a_batch_in_flight_gets_the_verdicts_of_one_at_a_time(
    tasks_root: Path, ledger_dir: Path, cli: Callable[..., Any]
) -> None:
    items = [(TASK, {"kernel.py": src}) for src in BATCH]
    results, runs = {}, {}
    for k in (1, len(BATCH)):
        with Evaluator(ledger_dir, tasks_root=tasks_root, device="cpu", timing=TIMING,
                       policy=POLICY, in_flight=k) as ev:  # fmt: skip
            samples = [Sample(trainer="test", step=k, index=i) for i in range(len(BATCH))]
            results[k] = ev.evaluate_batch(items, samples=samples)
            runs[k] = ev.run_id
    serial, flight = results[1], results[len(BATCH)]
    assert [verdict(r) for r in flight] == [verdict(r) for r in serial]
    assert [(r.compiled, r.correct, r.reward) for r in serial[:4]] == [
        (True, True, 1.0), (True, False, 0.0), (False, False, 0.0), (False, False, 0.0)
    ]  # fmt: skip
    assert serial[4].hack_flags == ["forbidden_api"]
    assert verdict(serial[3])[4].startswith("File ") and "SyntaxError" in serial[3].error

    evs = events(ledger_dir, runs[len(BATCH)])
    keys = [r.attempt_key for r in flight]
    assert len(set(keys)) == len(BATCH)
    one_of_each(evs, keys)
    final = [e for e in evs if e.type == "Scored" and e.payload.purpose == "final"]
    assert sorted(e.attempt_key for e in final) == sorted(keys)
    # The wrong and broken candidates each ask whether the task fails by itself: its
    # baseline is evaluated once for all of them, as one at a time.
    for run in runs.values():
        started = [e for e in events(ledger_dir, run) if e.type == "EvaluationStarted"]
        assert Counter(e.payload.purpose for e in started) == {"final": 5, "validate": 1}
    # Each result is the attempt that recorded its own sample.
    said = {e.attempt_key: json.loads(e.payload.items[0].data) for e in evs
            if e.type == "AgentOutput"}  # fmt: skip
    assert [said[r.attempt_key]["index"] for r in flight] == list(range(len(BATCH)))
    # They overlapped; one at a time never did.
    assert peak(evs) >= 2 and peak(events(ledger_dir, runs[1])) == 1
    assert cli("ledger", "verify", "--ledger", str(ledger_dir)).code == 0
    audited = cli("audit", flight[0].attempt_key, "--run", runs[len(BATCH)],
                  "--ledger", str(ledger_dir))  # fmt: skip
    assert audited.code == 0 and "kernel.py" in audited.out


def test_a_failure_in_a_batch_keeps_the_others_records(
    tasks_root: Path, ledger_dir: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import aka.api

    real = aka.api.evaluate

    def crashing(ledger: Ledger, run_id: str, key: str | None, req: Any, **kw: Any) -> Any:
        files = b"".join(ledger.cas.get(e.digest) for e in ledger.cas.read_tree(req.candidate))
        if b"# the evaluator crashes on this one" in files:
            raise RuntimeError("evaluator crashed")
        return real(ledger, run_id, key, req, **kw)

    monkeypatch.setattr(aka.api, "evaluate", crashing)
    sources = [CORRECT + "# the evaluator crashes on this one\n", CORRECT, WRONG, NO_COMPILE]
    with Evaluator(ledger_dir, tasks_root=tasks_root, device="cpu", timing=TIMING,
                   in_flight=4) as ev:  # fmt: skip
        with pytest.raises(RuntimeError, match="evaluator crashed") as failed:
            ev.evaluate_batch([(TASK, {"kernel.py": s}) for s in sources])
        run_id = ev.run_id
    assert "3 other items finished and were recorded" in "".join(failed.value.__notes__)
    evs = events(ledger_dir, run_id)
    finished = {e.attempt_key: e.payload for e in evs if e.type == "AttemptFinished"}
    assert sorted(f.status for f in finished.values()) == ["error", "scored", "scored", "scored"]
    assert "evaluator crashed" in next(f.error for f in finished.values() if f.status == "error")
    one_of_each(evs, list(finished))
    scored = [e for e in evs if e.type == "Scored" and e.payload.purpose == "final"]
    assert sorted(e.payload.correct for e in scored) == [False, False, True]
    assert [e.type for e in evs][-1] == "RunFinished"
    assert cli("ledger", "verify", "--ledger", str(ledger_dir)).code == 0


def test_concurrent_requests_to_aka_serve_get_their_own_rewards(
    tasks_root: Path, ledger_dir: Path
) -> None:
    from aka.cli._serve import make_server

    responses = [f"```python path=kernel.py\n{s}```" for s in (CORRECT, WRONG, NO_COMPILE)]
    responses += [PROSE, f"```python path=kernel.py\n{CORRECT}# again\n```"]
    got: dict[int, dict[str, Any]] = {}
    led = Ledger.open(ledger_dir, registry=REGISTRY)
    with Evaluator(led, tasks_root=tasks_root, device="cpu", timing=TIMING, policy=POLICY,
                   in_flight=2) as ev:  # fmt: skip
        server = make_server(ev, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}"
        go = threading.Barrier(len(responses))

        def post(i: int) -> None:
            body = {"task": TASK, "response": responses[i],
                    "sample": {"trainer": "http", "step": 1, "index": i}}  # fmt: skip
            req = urllib.request.Request(f"{url}/reward", data=json.dumps(body).encode(),
                                         method="POST")  # fmt: skip
            go.wait(timeout=30)
            with urllib.request.urlopen(req, timeout=300) as r:
                got[i] = json.loads(r.read())

        try:
            with urllib.request.urlopen(f"{url}/health", timeout=30) as r:
                assert json.loads(r.read())["in_flight"] == 2
            threads = [threading.Thread(target=post, args=(i,)) for i in range(len(responses))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=300)
            # A trainer's batch through AKA_SERVE_URL is sent as the server's limit at once.
            from aka.integrations.trl import AkaReward

            reward = AkaReward(task=TASK, url=url)
            assert reward(prompts=["p", "p"], completions=responses[:2]) == [1.0, 0.0]
            assert reward.scorer.in_flight == 2  # type: ignore[attr-defined]
        finally:
            server.shutdown()
            server.server_close()
        run_id = ev.run_id
    led.close()
    assert sorted(got) == list(range(len(responses)))
    assert [(got[i]["correct"], got[i]["score"]) for i in range(5)] == [
        (True, 1.0), (False, 0.0), (False, 0.0), (False, 0.0), (True, 1.0)
    ]  # fmt: skip
    assert "SyntaxError" in got[2]["error"] and "SyntaxError" in got[3]["error"]
    evs = events(ledger_dir, run_id)
    keys = [got[i]["attempt_key"] for i in range(len(responses))]
    one_of_each(evs, keys + [r.attempt_key for r in reward.last])
    # Each reply is the attempt that recorded its own request's text and index.
    said = {e.attempt_key: (json.loads(e.payload.items[0].data)["index"], e.payload.items[0].text)
            for e in evs if e.type == "AgentOutput"}  # fmt: skip
    assert [said[got[i]["attempt_key"]] for i in range(5)] == list(enumerate(responses))
    # Five at once were sent; two were evaluated at a time.
    assert peak(evs) == 2


def test_trainer_batches_are_scored_in_flight_in_order(tasks_root: Path, ledger_dir: Path) -> None:
    from types import SimpleNamespace

    from aka.integrations.trl import AkaReward
    from aka.integrations.verl import compute_score_batch

    good = f"```python path=kernel.py\n{CORRECT}```"
    wrong = f"```python path=kernel.py\n{WRONG}```"
    reward = AkaReward(task=TASK, tasks_root=tasks_root, device="cpu", ledger=ledger_dir,
                       policy=POLICY, in_flight=3)  # fmt: skip
    state = SimpleNamespace(global_step=4)
    assert reward(prompts=["p"] * 4, completions=[wrong, good, PROSE, ""],
                  trainer_state=state) == [0.0, 1.0, 0.0, 0.0]  # fmt: skip
    assert [r.form for r in reward.last] == ["fenced", "fenced", "bare", None]
    trl_run = reward.last[0].run_id
    reward.close()
    truth = json.dumps({"task": TASK})
    kw = {"tasks_root": str(tasks_root), "ledger": str(ledger_dir), "device": "cpu",
          "policy": POLICY, "in_flight": "3"}  # fmt: skip
    out = compute_score_batch(["aka"] * 3, [good, PROSE, wrong], [truth] * 3, None, **kw)
    assert [(o["score"], o["correct"], o["parsed"]) for o in out] == [
        (1.0, 1.0, 1.0), (0.0, 0.0, 1.0), (0.0, 0.0, 1.0)
    ]  # fmt: skip
    trl = events(ledger_dir, trl_run)
    said = {e.attempt_key: json.loads(e.payload.items[0].data) for e in trl
            if e.type == "AgentOutput"}  # fmt: skip
    assert [(said[r.attempt_key]["step"], said[r.attempt_key]["index"]) for r in reward.last] == [
        (4, 0), (4, 1), (4, 2), (4, 3)
    ]  # fmt: skip
    assert peak(trl) >= 2
    with pytest.raises(Exception, match=r"in_flight"):
        compute_score_batch(["aka"], [good], [truth], None, **{**kw, "in_flight": 0})


def test_aka_serve_stops_on_interrupt_and_finishes_its_run(
    tasks_root: Path, ledger_dir: Path
) -> None:
    """Ctrl-C ends the service run with ``RunFinished`` (it used to close the ledger first
    and fail writing it), after the requests it answered."""
    import signal
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "aka.cli", "serve", "--root", str(tasks_root), "--device",
           "cpu", "--port", "0", "--in-flight", "2", "--ledger", str(ledger_dir)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "2 in flight" in line, (line, proc.stderr.read() if proc.poll() else "")
        url = re.search(r"http://\S+", line).group(0)  # type: ignore[union-attr]
        body = {"task": TASK, "response": "", "sample": {"trainer": "http"}}
        req = urllib.request.Request(f"{url}/reward", data=json.dumps(body).encode(),
                                     method="POST")  # fmt: skip
        with urllib.request.urlopen(req, timeout=60) as r:
            got = json.loads(r.read())
        assert got["score"] == 0.0 and "the response is empty" in got["error"]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    evs = events(ledger_dir, got["run_id"])
    assert [e.type for e in evs][-1] == "RunFinished"
    assert evs[-1].payload.attempts == 1


def test_closing_waits_for_evaluations_in_flight(
    tasks_root: Path, ledger_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An evaluator closed while another thread evaluates (``aka serve`` stopping) records
    that attempt first, then ``RunFinished`` counting it."""
    import aka.api

    real, entered = aka.api.evaluate, threading.Event()

    def slow(*args: Any, **kw: Any) -> Any:
        entered.set()
        return real(*args, **kw)

    monkeypatch.setattr(aka.api, "evaluate", slow)
    got: list[Any] = []
    ev = Evaluator(ledger_dir, tasks_root=tasks_root, device="cpu", timing=TIMING, in_flight=2)
    worker = threading.Thread(target=lambda: got.append(ev.evaluate(TASK, {"kernel.py": WRONG})))
    worker.start()
    assert entered.wait(timeout=120)
    ev.close()  # while the evaluation runs
    worker.join(timeout=120)
    assert got and got[0].compiled and not got[0].correct
    evs = events(ledger_dir, got[0].run_id)
    kinds = [e.type for e in evs]
    assert kinds[-1] == "RunFinished" and evs[-1].payload.attempts == 1
    assert kinds.index("AttemptFinished") < kinds.index("RunFinished")


def test_the_in_flight_limit_and_how_a_batch_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from aka import inflight
    from aka.errors import InputError

    monkeypatch.delenv("AKA_IN_FLIGHT", raising=False)
    for cores, limit in ((1, 1), (2, 1), (6, 3), (16, 8), (128, 8)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda _pid, n=cores: set(range(n)))
        assert inflight.resolve(None) == limit
    monkeypatch.setenv("AKA_IN_FLIGHT", " 3 ")
    assert inflight.resolve(None) == 3 and inflight.resolve(5) == 5
    for bad in ("0", "two", "-1", "2.5"):
        monkeypatch.setenv("AKA_IN_FLIGHT", bad)
        with pytest.raises(InputError, match="AKA_IN_FLIGHT"):
            inflight.resolve(None)
    with pytest.raises(InputError, match="positive integer"):
        inflight.resolve(0, where="--in-flight")
    assert inflight.within(4, None) == 4 and inflight.within(4, 2) == 2
    with pytest.raises(InputError, match="above this evaluator's limit of 4"):
        inflight.within(4, 6)

    calls: list[int] = []
    lock = threading.Lock()

    def fn(i: int) -> int:
        with lock:
            calls.append(i)
        if i in (1, 2):
            raise ValueError(f"item {i} failed")
        return i * 10

    assert inflight.in_order(fn, [3, 0, 4], 3) == [30, 0, 40]
    calls.clear()
    with pytest.raises(ValueError, match="item 1 failed"):  # one at a time: stops there
        inflight.in_order(fn, [0, 1, 2, 3], 1)
    assert calls == [0, 1]
    calls.clear()
    with pytest.raises(ValueError, match="item 1 failed") as failed:  # in flight: all run
        inflight.in_order(fn, [0, 1, 2, 3], 3)
    assert sorted(calls) == [0, 1, 2, 3]
    assert "2 other items finished" in "".join(failed.value.__notes__)


def test_an_unreachable_server_is_an_error_naming_it_and_the_fix() -> None:
    """A trainer pointed at a server that is not there gets the address and both ways out,
    for one sample and for a batch (whose limit is asked of the server first)."""
    import socket

    from aka.errors import InputError
    from aka.integrations._http import HttpScorer
    from aka.integrations._scorer import Submission

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    scorer = HttpScorer(url, timeout=5)
    sample = Sample(trainer="trl")
    with pytest.raises(InputError) as one:
        scorer.score("triton2triton/llm/softmax", "x", sample)
    batch = [Submission("triton2triton/llm/softmax", "x", sample, None)] * 2
    with pytest.raises(InputError) as many:
        scorer.score_batch(batch)
    for err in (one.value, many.value):
        assert "cannot reach aka serve" in err.message and err.where == url
        assert "aka serve" in (err.fix or "") and "AKA_SERVE_URL" in (err.fix or "")


def test_several_gpus_each_get_the_least_busy_share(
    tmp_path: Path, tasks_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``device="cuda:0,1"``: each evaluation goes to the GPU with the fewest in flight,
    so a batch spreads over both and neither holds two while the other idles. (On this
    CPU machine each evaluation runs on the CPU once its GPU is chosen.)"""
    import dataclasses

    import aka.api

    real = aka.api.evaluate
    chosen: list[tuple[str, dict[str, int]]] = []

    def on_cpu(led: Ledger, run_id: str, key: str | None, req: Any, **kw: Any) -> Any:
        chosen.append((req.device, evaluator.devices.load()))
        return real(led, run_id, key, dataclasses.replace(req, device="cpu"), **kw)

    monkeypatch.setattr(aka.api, "evaluate", on_cpu)
    with Evaluator(tmp_path / "led", tasks_root=tasks_root, device="cuda:0,1", timing=TIMING,
                   policy=POLICY, in_flight=2) as evaluator:  # fmt: skip
        results = evaluator.evaluate_batch([(TASK, {"kernel.py": CORRECT})] * 4)
    assert [r.correct for r in results] == [True] * 4
    assert {d for d, _ in chosen} == {"cuda:0", "cuda:1"}
    assert all(max(load.values()) - min(load.values()) <= 1 for _, load in chosen)


@pytest.mark.parametrize("spec", ["cuda:0,0", "cuda:0,x", "cpu,cuda", "cuda:0,,1"])
def test_a_bad_gpu_list_says_how_to_write_one(spec: str, tmp_path: Path, tasks_root: Path) -> None:
    from aka.errors import InputError

    with pytest.raises(InputError) as err:
        Evaluator(tmp_path / "led", tasks_root=tasks_root, device=spec)
    assert spec in str(err.value) and "cuda:0,1,2,3" in err.value.render()
