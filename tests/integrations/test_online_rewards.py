"""verl, TRL and SkyRL entry points, called as the trainers call them, score through aka.

Each test uses the fixture task (``torch/ops/affine``): its own source is a correct
candidate (reward > 0), prose is a candidate that does not compile (reward 0), and every
reward lands in the ledger as an attempt with the trainer's sample recorded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

from aka.errors import InputError
from aka.events import REGISTRY, CorrectnessChecked, KernelTimed
from aka.integrations._dataset import export_prompts
from aka.integrations._scorer import close_shared
from aka.tables import attempt_table
from aka_ledger import Ledger

TASK = "torch/ops/affine"
PROSE = "I would fuse the multiply and the add; that should be about twice as fast."
WRONG = "```python path=kernel.py\nimport torch\n\n\ndef affine(x):\n    return x * 3\n```"


@pytest.fixture(autouse=True)
def _close_scorers() -> Iterator[None]:
    yield
    close_shared()


@pytest.fixture
def good(tasks_root: Path) -> str:
    """The task's own source, answered the way the prompt asks."""
    source = (tasks_root / TASK / "source" / "kernel.py").read_text()
    return f"Here is the kernel, unchanged:\n\n```python path=kernel.py\n{source}```\n"


def rows(tasks_root: Path, ledger_dir: Path, fmt: str, **kw: object) -> list[dict]:
    led = Ledger.open(ledger_dir, registry=REGISTRY)
    try:
        out, skipped = export_prompts(
            tasks_root,
            [TASK],
            ledger_dir.parent / f"{fmt}.parquet",
            format=fmt,
            device="cpu",
            ledger=led,
            **kw,  # type: ignore[arg-type]
        )
    finally:
        led.close()
    assert not skipped
    return pl.read_parquet(out).to_dicts()


def recorded(ledger_dir: Path) -> tuple[pl.DataFrame, list[dict]]:
    """The scored attempts, and the sample data of every attempt (scored or not), in the
    trainer's order."""
    led = Ledger.open(ledger_dir, registry=REGISTRY)
    try:
        table = attempt_table(led, turns=False)
        samples = [
            {
                **json.loads(e.payload.items[0].data),
                "attempt_key": e.attempt_key,
                "run_id": e.run_id,
                "text": e.payload.items[0].text,
            }
            for e in led.events(types=["AgentOutput"])
        ]
        finished = {
            (e.run_id, e.attempt_key): e.payload.error
            for e in led.events(types=["AttemptFinished"])
        }
    finally:
        led.close()
    for s in samples:
        s["error"] = finished[(s["run_id"], s["attempt_key"])]
    # A batch scored in flight records its samples in the order they finish: read them in
    # the trainer's order (step, index within it, turn of an episode).
    samples.sort(key=lambda s: tuple(s.get(k, -1) for k in ("step", "index", "turn")))
    return table, samples


def test_verl_compute_score_reads_the_solution(
    tasks_root: Path, ledger_dir: Path, good: str, cli
) -> None:
    from aka.integrations.verl import compute_score, compute_score_batch

    (row,) = rows(tasks_root, ledger_dir, "verl")
    truth, info = row["reward_model"]["ground_truth"], row["extra_info"]
    assert json.loads(truth)["task"] == TASK and info["task_digest"].startswith("b3:")
    kw = {"tasks_root": str(tasks_root), "ledger": str(ledger_dir), "device": "cpu"}
    right = compute_score(row["data_source"], good, truth, info, **kw)
    assert right["score"] > 120 and right["correct"] == 1.0 and right["parsed"] == 1.0
    # verl hands rows over as numpy values (object arrays of parquet rows)
    info = {**info, "index": np.int64(info["index"])}
    batch = compute_score_batch(
        data_sources=["aka", "aka"],
        solution_strs=[PROSE, ""],
        ground_truths=[truth, truth],
        extra_infos=[info, info],
        **kw,
    )
    assert [b["score"] for b in batch] == [0.0, 0.0]
    assert (
        batch[0]["parsed"] == 1.0 and batch[0]["compiled"] == 0.0
    )  # read as a file; did not compile
    assert batch[1]["parsed"] == 0.0  # nothing to read
    assert set(right) == set(batch[0]) == set(batch[1])  # verl needs the same keys per row
    table, samples = recorded(ledger_dir)
    assert sorted(table["score"].to_list()) == [0.0, right["score"]]
    assert [s["trainer"] for s in samples] == ["verl"] * 3
    first = samples[0]["index"]  # a running index, one per response, in the order given
    assert [s["index"] for s in samples] == [first, first + 1, first + 2]
    assert {s["row"] for s in samples} == {0}
    assert "the response is empty" in samples[-1]["error"]
    best = table.sort("score")[-1].to_dicts()[0]
    audited = cli(
        "audit", best["attempt_key"], "--run", best["run_id"], "--ledger", str(ledger_dir)
    )
    assert audited.code == 0 and "kernel.py" in audited.out
    errors = cli(
        "sql",
        "SELECT payload->>'$.error' AS error FROM events WHERE type = 'AttemptFinished'",
        "--ledger",
        str(ledger_dir),
        "--format",
        "json",
    )
    assert errors.code == 0 and "the response is empty" in errors.out


def test_verl_loads_the_function_from_its_file_path(tasks_root: Path, ledger_dir: Path) -> None:
    """verl's ``custom_reward_function.path`` loads the file as a module of its own."""
    import functools
    import importlib.util

    import aka.integrations.verl as verl_module

    spec = importlib.util.spec_from_file_location("custom_module", verl_module.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kw = {"tasks_root": str(tasks_root), "ledger": str(ledger_dir), "device": "cpu"}
    for name in ("compute_score", "compute_score_batch"):
        assert getattr(module, name).__code__.co_filename == verl_module.__file__
    fn = functools.partial(module.compute_score, **kw)  # as verl binds reward_kwargs
    (row,) = rows(tasks_root, ledger_dir, "verl")
    got = fn(row["data_source"], PROSE, row["reward_model"]["ground_truth"], row["extra_info"])
    assert got["score"] == 0.0 and got["parsed"] == 1.0 and got["compiled"] == 0.0


def test_a_changed_task_folder_is_refused(tasks_root: Path, ledger_dir: Path, good: str) -> None:
    from aka.integrations.verl import compute_score

    (row,) = rows(tasks_root, ledger_dir, "verl")
    (tasks_root / TASK / "reference.py").write_text("# edited after the export\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"extra_info\.task_digest"):
        compute_score(
            "aka",
            good,
            row["reward_model"]["ground_truth"],
            row["extra_info"],
            tasks_root=str(tasks_root),
            ledger=str(ledger_dir),
            device="cpu",
        )
    with pytest.raises(InputError, match="unknown settings"):
        compute_score(
            "aka",
            good,
            row["reward_model"]["ground_truth"],
            row["extra_info"],
            tasks_root=str(tasks_root),
            ledger=str(ledger_dir),
            devise="cpu",
        )


def test_trl_reward_plain_and_conversational(tasks_root: Path, ledger_dir: Path, good: str) -> None:
    from aka.integrations.trl import AkaReward

    reward = AkaReward(
        task=TASK, tasks_root=tasks_root, device="cpu", ledger=ledger_dir, run_name="grpo-1"
    )
    assert reward.__name__ == "aka_reward"
    state = SimpleNamespace(global_step=3)
    plain = reward(prompts=["p1", "p2"], completions=[good, PROSE], trainer_state=state)
    assert plain[0] > 120 and plain[1] == 0.0
    chat = reward(
        prompts=[[{"role": "user", "content": "make it fast"}]],
        completions=[[{"role": "assistant", "content": good}]],
        task=[TASK],
        trainer_state=state,
    )
    assert chat[0] > 120
    reward.close()
    table, samples = recorded(ledger_dir)
    assert sorted(table["score"].to_list()) == sorted([*plain, *chat])
    assert [(s["step"], s["index"], s["trainer_run"]) for s in samples] == [
        (3, 0, "grpo-1"),
        (3, 1, "grpo-1"),
        (3, 2, "grpo-1"),
    ]
    assert samples[1]["text"] == PROSE
    # The prompt and the candidate's diff come back in the reward export's columns.
    assert set(table["prompt"].to_list()) == {"p1", "p2", "make it fast"}
    wrote = dict(zip(table["prompt"].to_list(), table["response"].to_list(), strict=True))
    assert "+++ b/kernel.py" in wrote["p2"]  # the prose became kernel.py: its diff is the response


def test_skyrl_episode_gets_aka_feedback_each_turn(
    tasks_root: Path, ledger_dir: Path, good: str
) -> None:
    import skyrl_gym

    import aka.integrations.skyrl  # noqa: F401  (registers the environment)

    (row,) = rows(tasks_root, ledger_dir, "skyrl", max_turns=3)
    assert row["env_class"] == "aka"
    env = skyrl_gym.make(
        "aka",
        env_config={"tasks_root": str(tasks_root), "ledger": str(ledger_dir), "device": "cpu"},
        extras=row,
    )
    prompt, meta = env.init(row["prompt"])
    assert prompt == row["prompt"] and meta["task"] == TASK
    first = env.step(PROSE)
    assert first["reward"] == 0.0 and not first["done"]
    said = first["observations"][0]["content"]
    assert (
        "compiled: no" in said
        and "SyntaxError" in said
        and first["observations"][0]["role"] == "user"
    )
    second = env.step(WRONG)
    assert (
        second["reward"] == 20.0
        and "first failing case: N=4096 float32" in second["observations"][0]["content"]
    )
    third = env.step(good)
    assert third["done"] and third["observations"] == [] and third["reward"] > 120
    assert third["metadata"]["correct"] == 1.0 and third["metadata"]["attempt_key"]
    assert env.get_metrics() == {"turns": 3, "best_score": third["reward"], "correct_turns": 1}
    table, samples = recorded(ledger_dir)
    assert [s["turn"] for s in samples] == [1, 2, 3] and len({s["episode"] for s in samples}) == 1
    assert sorted(table["score"].to_list()) == [0.0, 20.0, third["reward"]]


def test_correct_feedback_lists_each_shape(tasks_root: Path, ledger_dir: Path, good: str) -> None:
    from aka.api import Evaluator, Sample
    from aka.integrations._scorer import LocalScorer

    with Evaluator(ledger_dir, tasks_root=tasks_root, device="cpu") as ev:
        r = LocalScorer(ev).score(TASK, good, Sample(trainer="test"))
    assert r.correct and r.form == "fenced"
    assert "correct: yes (2/2 cases of the shown shapes passed)" in r.feedback
    assert "held-out shapes: passed" in r.feedback
    assert "- N=4096 float32: " in r.feedback and "x (baseline " in r.feedback
    assert "4099" not in r.feedback  # checked, never timed, never named
    # The feedback made while evaluating is what the ledger's events for it give later.
    from aka.feedback import FEEDBACK_EVENTS, render_feedback

    led = Ledger.open(ledger_dir, registry=REGISTRY)
    try:
        stored = [
            e.payload
            for e in led.events(types=FEEDBACK_EVENTS)
            if getattr(e.payload, "eval_id", None) == r.eval_id
        ]
    finally:
        led.close()
    assert len(stored) == 4 and render_feedback(stored) == r.feedback


# Right on the shape the prompt shows (N=4096), wrong elsewhere: one answers wrong, one
# raises with what it was given, to carry the held-out shape into the next turn's prompt.
FITTED = {
    "wrong": "return x * 2 + 1 if x.numel() == 4096 else x * 3",
    "telling": "if x.numel() != 4096:\n        raise ValueError(f'given {tuple(x.shape)}')\n"
    "    return x * 2 + 1",
}


@pytest.mark.parametrize("fitted", sorted(FITTED))
def test_held_out_shapes_decide_the_reward_and_are_never_named(
    tasks_root: Path, ledger_dir: Path, fitted: str
) -> None:
    from aka.api import Evaluator, Sample
    from aka.integrations._scorer import LocalScorer

    response = (
        f"```python path=kernel.py\nimport torch\n\n\ndef affine(x):\n    {FITTED[fitted]}\n```"
    )
    with Evaluator(ledger_dir, tasks_root=tasks_root, device="cpu") as ev:
        r = LocalScorer(ev).score(TASK, response, Sample(trainer="test"))
    assert r.compiled and not r.correct and r.score == 20.0, (r.score, r.error)
    # two cases of the shown shape, two of the held-out one (its seeds: the smallest shape)
    assert "correct: no (2/2 cases of the shown shapes passed)" in r.feedback, r.feedback
    assert "held-out shapes: failed (how many" in r.feedback
    held_line = next(line for line in r.feedback.splitlines() if line.startswith("held-out"))
    assert not any(ch.isdigit() for ch in held_line), held_line  # no count to read sizes off
    assert "4099" not in r.feedback and "given" not in r.feedback, r.feedback
    led = Ledger.open(ledger_dir, registry=REGISTRY)
    try:  # the ledger keeps what the policy is not told: every score stays auditable
        ours = [e.payload for e in led.events() if getattr(e.payload, "eval_id", "") == r.eval_id]
        (checked,) = [p for p in ours if isinstance(p, CorrectnessChecked)]
        timed = [p for p in ours if isinstance(p, KernelTimed)]
    finally:
        led.close()
    held = [c for c in checked.cases if c.heldout]
    assert [c.shape for c in held] == [{"N": 4099}] * 2 and not any(c.ok for c in held)
    assert checked.heldout_failed and "4099" in (r.error or "")  # the trainer's log has it
    assert all(c.ok and not c.heldout for c in checked.cases if c.shape == {"N": 4096})
    assert not timed  # a wrong candidate is not timed


LEAKS = Path(__file__).parent / "leaks"


@pytest.mark.parametrize("leak", sorted(p.stem for p in LEAKS.glob("*.py")))
def test_what_a_candidate_saw_of_a_held_out_input_never_reaches_the_policy(
    tasks_root: Path, ledger_dir: Path, leak: str
) -> None:
    # each tries to carry the held-out size (4099, 0x1003) into the text or the numbers a
    # multi-turn policy is shown; the held-out check runs in processes of its own after
    # the tuning evaluation, so none of them has seen it there
    from aka.api import Evaluator, Sample
    from aka.integrations._scorer import LocalScorer

    source = (LEAKS / f"{leak}.py").read_text()
    response = f"```python path=kernel.py\n{source}```"
    with Evaluator(ledger_dir, tasks_root=tasks_root, device="cpu") as ev:
        r = LocalScorer(ev).score(TASK, response, Sample(trainer="test"))
    assert r.compiled, r.error
    for told in (r.feedback, r.error or ""):
        assert "4099" not in told and "1003" not in told and "size-" not in told, told
    shown = [float(us) for us in re.findall(r"candidate ([\d.]+) us", r.feedback)]
    assert all(us < 4000 for us in shown), shown  # 2 us x 4099 would be 8198 us
    # two are judged wrong on the shown shape by themselves (a wrong case, a flagged open)
    assert r.correct == (leak in ("exit_stderr", "timing")), r.feedback


@pytest.mark.parametrize(
    ("response", "says"),
    [
        ("", "the response is empty"),
        ("x" * 300_000, "over the 262144 limit"),
        (
            "```python path=reference.py\nraise SystemExit\n```",
            "'reference.py' is not an editable file",
        ),
        ("```python path=../../../escaped.py\nopen('/tmp/x','w')\n```", "leaves the workspace"),
        ("```python path=/tmp/aka-escaped.py\nx = 1\n```", "is absolute"),
        # "\ud800" in a JSON request decodes to a lone surrogate, which no file can hold
        ("```python path=kernel.py\nx = '\ud800'\n```", "character 30 is a lone surrogate"),
    ],
)
def test_bad_input_gets_zero_and_touches_nothing(
    cli, tmp_path: Path, tasks_root: Path, ledger_dir: Path, response: str, says: str
) -> None:
    from aka.integrations.trl import AkaReward

    def files_outside_the_ledger() -> dict[str, bytes]:
        return {
            str(p.relative_to(tmp_path)): p.read_bytes()
            for p in tmp_path.rglob("*")
            if p.is_file() and ledger_dir not in p.parents
        }

    before = files_outside_the_ledger()
    reward = AkaReward(task=TASK, tasks_root=tasks_root, device="cpu", ledger=ledger_dir)
    assert reward(prompts=["p"], completions=[response]) == [0.0]
    assert says in (reward.last[0].error or "") and reward.last[0].eval_id == ""
    reward.close()
    assert files_outside_the_ledger() == before
    assert (
        not (tmp_path.parent / "escaped.py").exists() and not Path("/tmp/aka-escaped.py").exists()
    )
    table, samples = recorded(ledger_dir)
    assert table.height == 0  # nothing was evaluated
    assert says in samples[0]["error"]
    audited = cli("audit", samples[0]["attempt_key"], "--ledger", str(ledger_dir))
    assert audited.code == 2 and "was never evaluated" in audited.err and says in audited.err


def test_rewards_through_aka_serve(tasks_root: Path, ledger_dir: Path, good: str) -> None:
    import threading
    import urllib.error
    import urllib.request

    from aka.api import Evaluator
    from aka.cli._serve import make_server
    from aka.integrations.trl import AkaReward

    led = Ledger.open(ledger_dir, registry=REGISTRY)
    with Evaluator(led, tasks_root=tasks_root, device="cpu") as ev:
        server = make_server(ev, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            reward = AkaReward(task=TASK, url=url)
            assert reward(prompts=["p", "p"], completions=[good, ""]) == [reward.last[0].score, 0.0]
            assert reward.last[0].correct and "the response is empty" in (
                reward.last[1].error or ""
            )
            bad = urllib.request.Request(
                f"{url}/reward",
                data=json.dumps({"task": TASK, "response": 3}).encode(),
                method="POST",
            )
            with pytest.raises(urllib.error.HTTPError) as exc:
                urllib.request.urlopen(bad, timeout=60)
            assert (
                exc.value.code == 400
                and "response must be a string" in json.loads(exc.value.read())["error"]
            )
            with pytest.raises(InputError, match="no task for this row"):
                AkaReward(url=url)(prompts=["p"], completions=[good])
        finally:
            server.shutdown()
            server.server_close()
    led.close()
    table, samples = recorded(ledger_dir)
    assert table["score"].to_list() == [reward.last[0].score]
    assert [s["trainer"] for s in samples] == ["trl", "trl"]


def test_no_ledger_and_no_server_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from aka.integrations.trl import AkaReward

    monkeypatch.delenv("AKA_SERVE_URL", raising=False)
    with pytest.raises(InputError, match="AKA_LEDGER"):
        AkaReward(task=TASK)
