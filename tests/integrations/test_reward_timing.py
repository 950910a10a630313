"""A trainer's timing budget reaches the evaluator that scores its rewards.

Each candidate holds its device alone while it is timed, so the per-shape budget
(``TimingSettings.max_time_s``) bounds how many new samples a trainer gets scored per
minute. verl (``reward_kwargs.timing``), SkyRL (``env_config.timing``) and TRL
(``AkaReward(timing=)``) set it in their own config; a bad value stops the trainer
before any reward with the field it got wrong, and a server, which times with its own
settings, refuses one (docs/trainers.md, "The timing budget").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aka.config import TimingSettings
from aka.errors import InputError
from aka.events import REGISTRY
from aka.integrations._scorer import LocalScorer, close_shared, open_scorer, shared_scorer
from aka_ledger import Ledger

TASK = "torch/ops/affine"
ROW = {"extra_info": {"task": TASK}}
# As a YAML or JSON trainer config may give it: some numbers written as strings.
BUDGET = {"max_time_s": "0.2", "target_rel_ci": 0.01, "min_samples": "5"}
EXPECTED = TimingSettings(max_time_s=0.2, target_rel_ci=0.01, min_samples=5)


@pytest.fixture(autouse=True)
def _close_scorers() -> Iterator[None]:
    yield
    close_shared()


@pytest.fixture
def base(tasks_root: Path, ledger_dir: Path) -> dict[str, str]:
    """The in-process settings every trainer gives (CPU, the fixture tasks)."""
    return {"tasks_root": str(tasks_root), "ledger": str(ledger_dir), "device": "cpu"}


def timing_of(scorer: Any) -> TimingSettings:
    assert isinstance(scorer, LocalScorer)
    return scorer.evaluator.timing


def test_verl_reward_kwargs_timing_reaches_the_evaluators_jobs(
    tasks_root: Path, ledger_dir: Path, base: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import aka.kinds._kernel as kernel
    from aka.integrations.verl import compute_score

    jobs = []
    real = kernel.job_for

    def spy(*args: Any, **kwargs: Any) -> Any:
        jobs.append(real(*args, **kwargs))
        return jobs[-1]

    monkeypatch.setattr(kernel, "job_for", spy)
    source = (tasks_root / TASK / "source" / "kernel.py").read_text()
    good = f"```python path=kernel.py\n{source}```\n"
    got = compute_score("aka", good, json.dumps({"task": TASK}), None, **base, timing=BUDGET)
    assert got["correct"] == 1.0
    # Every job the evaluation ran carried the trainer's budget, the timed one included.
    assert [job.timing for job in jobs] == [EXPECTED.model_dump()] * len(jobs)
    assert any(job.time for job in jobs)
    # The service run records the timing its rewards were given.
    led = Ledger.open(ledger_dir, registry=REGISTRY)
    try:
        (started,) = led.events(types=["RunStarted"])
        config = json.loads(led.cas.get(started.payload.config))
    finally:
        led.close()
    assert config["timing"] == EXPECTED.model_dump(mode="json")


def test_each_trainer_opens_its_evaluator_with_its_timing(base: dict[str, str]) -> None:
    import skyrl_gym
    from omegaconf import OmegaConf

    import aka.integrations.skyrl  # noqa: F401  (registers the environment)
    from aka.integrations.trl import AkaReward

    scorer = open_scorer(**base, timing=BUDGET)
    assert timing_of(scorer) == EXPECTED
    scorer.close()
    reward = AkaReward(task=TASK, **base, timing=EXPECTED)
    assert timing_of(reward.scorer) == EXPECTED
    reward.close()
    # SkyRL hands env_config over as an OmegaConf section, timing a section within it.
    env = skyrl_gym.make("aka", env_config=OmegaConf.create({**base, "timing": BUDGET}), extras=ROW)
    assert timing_of(env.scorer) == EXPECTED
    # One shared scorer per budget: the same budget written otherwise shares the
    # environment's, another budget (or none) gets a scorer of its own.
    same = {"max_time_s": 0.2, "target_rel_ci": "0.01", "min_samples": 5}
    assert shared_scorer({**base, "timing": same}, label="skyrl", where="env_config") is env.scorer
    other = shared_scorer({**base, "timing": {"max_time_s": 1}}, label="skyrl", where="env_config")
    assert timing_of(other) == TimingSettings(max_time_s=1.0)
    default = shared_scorer(base, label="skyrl", where="env_config")
    assert timing_of(default) == TimingSettings()
    assert len({id(env.scorer), id(other), id(default)}) == 3


@pytest.mark.parametrize(
    ("timing", "field", "says", "fix"),
    [
        ({"max_time_s": -1}, "timing.max_time_s", "greater than 0 (got -1)", "a number > 0"),
        ({"max_time_s": "fast"}, "timing.max_time_s", "valid number", "a number > 0"),
        ({"budget": 0.2}, "timing.budget", "unknown key", "the timing keys are target_rel_ci"),
        ("fast", "timing", "expected a mapping", "max_time_s: 0.2"),
    ],
)
def test_a_bad_timing_names_its_field_and_the_fix(
    ledger_dir: Path, base: dict[str, str], timing: Any, field: str, says: str, fix: str
) -> None:
    import skyrl_gym

    import aka.integrations.skyrl  # noqa: F401  (registers the environment)
    from aka.integrations.verl import compute_score

    truth = json.dumps({"task": TASK})
    for where, call in [
        ("open_scorer", lambda: open_scorer(**base, timing=timing)),
        (
            "custom_reward_function.reward_kwargs",
            lambda: compute_score("aka", "", truth, None, **base, timing=timing),
        ),
        (
            "env_config",
            lambda: skyrl_gym.make("aka", env_config={**base, "timing": timing}, extras=ROW),
        ),
    ]:
        with pytest.raises(InputError) as exc:
            call()
        assert exc.value.where == f"{where}.{field}"
        assert says in exc.value.message and fix in (exc.value.fix or "")
    assert not ledger_dir.exists()  # refused before a ledger was opened


def test_a_trainer_s_timing_must_be_the_server_s(
    tasks_root: Path, ledger_dir: Path, base: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``aka serve`` times every request with its own settings: a trainer asking for a
    budget gets the server only when the server times with that budget, else an error
    with the ``aka serve`` options that would."""
    import threading

    from aka.api import Evaluator
    from aka.cli._serve import make_server
    from aka.integrations._http import HttpScorer
    from aka.integrations.trl import AkaReward
    from aka.integrations.verl import compute_score

    led = Ledger.open(ledger_dir, registry=REGISTRY)
    with Evaluator(led, tasks_root=tasks_root, device="cpu", timing=EXPECTED) as ev:
        server = make_server(ev, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            assert isinstance(open_scorer(url=url, timing=BUDGET), HttpScorer)  # the same budget
            with pytest.raises(InputError, match="times with") as exc:
                AkaReward(task=TASK, url=url, timing={"max_time_s": 0.5})
            assert exc.value.where == "AkaReward.timing"
            fix = exc.value.fix or ""
            assert "aka serve --target-rel-ci 0.005 --max-time-s 0.5 --min-samples 10" in fix
            assert "drop timing" in fix
            monkeypatch.setenv("AKA_SERVE_URL", url)  # a server named by the environment too
            with pytest.raises(InputError, match="times with") as exc:
                compute_score(
                    "aka", "", json.dumps({"task": TASK}), None, timing={"min_samples": 3}
                )
            assert exc.value.where == "custom_reward_function.reward_kwargs.timing"
            assert not isinstance(open_scorer(), LocalScorer)  # without timing it scores there
        finally:
            server.shutdown()
            server.server_close()
    led.close()
    with pytest.raises(InputError, match="cannot reach aka serve"):  # nothing to check against
        open_scorer(url="http://127.0.0.1:9", timing=BUDGET)


def test_aka_serve_takes_the_timing_options_and_names_a_bad_one(cli: Any, tmp_path: Path) -> None:
    from aka.cli._serve import _timing

    assert _timing(max_time_s=None, min_samples=None) is None  # the evaluator's default
    assert _timing(max_time_s=0.2, target_rel_ci=0.01, min_samples=5) == EXPECTED
    res = cli("serve", "--max-time-s", "-1", "--ledger", str(tmp_path / "led"), "--port", "0")
    assert res.code == 2
    assert "--max-time-s" in res.err and "greater than 0" in res.err
    assert not (tmp_path / "led").exists()  # refused before a ledger or a port was taken
