"""The evaluator's process layer is configured once, at the edge: defaults, config, flag."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aka.eval._switches import Switches
from aka.eval._workers import configure, current

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from arena_helpers import write_config


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    yield
    configure()


def test_every_switch_is_on_unless_the_environment_turns_it_off() -> None:
    assert Switches.from_env({}) == Switches()
    assert Switches().warm and Switches().gate and Switches().pid_namespace
    off = Switches.from_env({"AKA_EVAL_WARM": "0", "AKA_EVAL_GATE": "0", "AKA_EVAL_PIDNS": ""})
    assert (off.warm, off.gate, off.pid_namespace) == (False, False, True)
    with pytest.raises(ValueError, match="AKA_EVAL_CONTAIN='no': use 0 or 1"):
        Switches.from_env({"AKA_EVAL_CONTAIN": "no"})


def test_the_baseline_s_timer_is_off_unless_the_environment_turns_it_on() -> None:
    """``AKA_EVAL_TIMER`` (the baseline timed in a process apart, aka.eval._drawer) is off
    by default, where the drawer is on; its error says so."""
    assert Switches().drawer and Switches.from_env({}).drawer and not Switches().timer
    assert not Switches.from_env({"AKA_EVAL_DRAWER": "0"}).drawer
    assert Switches.from_env({"AKA_EVAL_TIMER": "1"}).timer
    assert not Switches.from_env({"AKA_EVAL_TIMER": ""}).timer
    with pytest.raises(ValueError, match=r"AKA_EVAL_TIMER='on': use 0 or 1 \(unset means off\)"):
        Switches.from_env({"AKA_EVAL_TIMER": "on"})


def test_the_environment_is_read_once_not_per_evaluation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AKA_EVAL_WARM", raising=False)
    workers = configure()
    monkeypatch.setenv("AKA_EVAL_WARM", "0")  # too late: the workers are configured
    assert current() is workers and current().warm


def _run_config(cli: Callable[..., Any], ledger: Path) -> dict[str, object]:
    from aka import events as ev
    from aka_ledger import Ledger

    led = Ledger.open(ledger, registry=ev.REGISTRY)
    started = [e.payload for e in led.events(types=["RunStarted"])]
    assert len(started) == 1
    assert isinstance(started[0], ev.RunStarted)
    return dict(json.loads(led.cas.get(started[0].config)))


def test_a_run_records_its_evaluator_setting_and_evaluates_so(
    cli: Callable[..., Any], tmp_path: Path, tasks_root: Path
) -> None:
    cfg = write_config(tmp_path, tasks_root)
    res = cli("run", str(cfg), "--cold-workers", "--ledger", str(tmp_path / "cold"))
    assert res.code == 0, res.err
    assert _run_config(cli, tmp_path / "cold")["evaluator"] == {"warm_workers": False}
    assert not current().warm and current().spares.waiting() == {}

    warm_cfg = write_config(tmp_path, tasks_root, name="warm.yaml",
                            evaluator={"warm_workers": True})  # fmt: skip
    res = cli("run", str(warm_cfg), "--ledger", str(tmp_path / "warm"))
    assert res.code == 0, res.err
    assert _run_config(cli, tmp_path / "warm")["evaluator"] == {"warm_workers": True}
    assert current().warm
    assert set(current().spares.waiting()) == {"aka.eval._candidate", "aka.eval._checker"}


def test_a_misspelt_evaluator_setting_names_the_field(
    cli: Callable[..., Any], tmp_path: Path, tasks_root: Path
) -> None:
    cfg = write_config(tmp_path, tasks_root, evaluator={"warm": False})
    res = cli("run", str(cfg), "--ledger", str(tmp_path / "l"))
    assert res.code == 2
    assert "evaluator" in res.err and "warm" in res.err
