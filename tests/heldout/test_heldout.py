"""Held-out re-evaluation: an agent that overfits to the tuning shapes shows up as a regression."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aka import events as ev
from aka.agent import AgentItem, AgentOutcome, AgentRequest, AgentSink, register_agent
from aka.heldout import QUADRANTS, HeldoutRow, run_heldout, summarize
from aka.orchestrator import run, run_state
from aka_ledger import Ledger
from tests.core.arena_helpers import write_config

OVERFIT_KERNEL = """import torch

N = 4096  # the CPU tuning shape, hard-coded


def affine(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(N, dtype=x.dtype, device=x.device)
    out.copy_(x[:N] * 2 + 1)
    return out
"""


@register_agent("test_overfit")
class OverfitAgent:
    """Rewrites the kernel so it only handles the tuning shape it was shown."""

    name = "test_overfit"

    def run(self, request: AgentRequest, sink: AgentSink) -> AgentOutcome:
        (request.workspace / "kernel.py").write_text(OVERFIT_KERNEL)
        sink.emit(AgentItem(kind="log", text="hard-coded N"))
        return AgentOutcome(status="ok", exit_code=0)


@pytest.fixture(scope="module")
def overfit_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One CPU run, two arms (noop, overfit), already re-evaluated on held-out shapes once."""
    import shutil

    from tests.conftest import FIXTURE_TASKS

    tmp = tmp_path_factory.mktemp("heldout")
    root = tmp / "tasks"
    shutil.copytree(FIXTURE_TASKS, root)
    cfg = write_config(
        tmp,
        root,
        arms=[{"name": "honest", "agent": "noop"}, {"name": "overfit", "agent": "test_overfit"}],
    )
    with Ledger.open(tmp / "ledger", registry=ev.REGISTRY, create=True) as led:
        rid = run(led, cfg)
    return tmp / "ledger", rid


def _open(path: Path) -> Ledger:
    return Ledger.open(path, registry=ev.REGISTRY)


def test_overfit_agent_is_a_regression(overfit_run: tuple[Path, str]) -> None:
    path, rid = overfit_run
    with _open(path) as led:
        rows = run_heldout(led, rid)
    by_arm = {r.arm: r for r in rows}
    # its own score already checked the held-out shape, and failed it, as does the
    # held-out re-evaluation: the score is a reward an overfit kernel does not get
    assert not by_arm["overfit"].tuning_correct and by_arm["honest"].tuning_correct
    assert by_arm["overfit"].heldout_correct is False
    assert by_arm["overfit"].quadrant == "regression"
    assert by_arm["honest"].quadrant == "both_pass"
    assert by_arm["honest"].heldout_speedup is not None
    arms = {a.arm: a for a in summarize(rows)}
    assert arms["overfit"].conditional_correctness == 0.0
    assert arms["honest"].conditional_correctness == 1.0


def test_heldout_is_recorded_reused_and_never_final(overfit_run: tuple[Path, str]) -> None:
    path, rid = overfit_run
    with _open(path) as led:
        finals_before = {k: a.score for k, a in run_state(led, rid).attempts.items()}
        run_heldout(led, rid)
        n = len(led.events(run_id=rid, types=["HeldoutEvaluated"]))
        run_heldout(led, rid)  # everything is recorded: nothing is evaluated again
        linked = led.events(run_id=rid, types=["HeldoutEvaluated"])
        assert len(linked) == n == 3  # one baseline + two attempts
        roles = sorted(e.payload.role for e in linked)
        assert roles == ["baseline", "candidate", "candidate"]
        shapes = {json.dumps(e.payload.shapes) for e in linked}
        assert shapes == {json.dumps([{"N": 4099}])}
        finals_after = {k: a.score for k, a in run_state(led, rid).attempts.items()}
        assert finals_after == finals_before  # held-out scores never replace the final score


def test_cli_reports_quadrants(overfit_run: tuple[Path, str], cli) -> None:
    path, rid = overfit_run
    res = cli("heldout", rid, "--ledger", str(path), "--format", "json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    quads = {a["arm"]: a["quadrant"] for a in doc["attempts"]}
    assert quads == {"honest": "both_pass", "overfit": "regression"}
    table = cli("heldout", rid, "--ledger", str(path))
    assert table.code == 0 and "regression" in table.out


def test_cli_unknown_run(tmp_path: Path, cli) -> None:
    res = cli("heldout", "nope", "--ledger", str(tmp_path / "none"))
    assert res.code == 2 and "no ledger" in res.err


def _row(arm: str, task: str, t: float | None, h: float | None, b: bool) -> HeldoutRow:
    return HeldoutRow(
        task=task,
        arm=arm,
        attempt_key=f"{task}#{arm}",
        tuning_correct=t is not None,
        tuning_speedup=t,
        heldout_correct=h is not None,
        heldout_speedup=h,
        baseline_correct=b,
        heldout_eval_id=None,
        error=None,
    )


speed = st.one_of(st.none(), st.floats(0.1, 10.0))


@given(st.lists(st.tuples(st.sampled_from("abc"), speed, speed, st.booleans()), min_size=1))
def test_summary_invariants(items: list[tuple[str, float | None, float | None, bool]]) -> None:
    rows = [_row("x", task, t, h, b) for task, t, h, b in items]
    (arm,) = summarize(rows, n_boot=200)
    assert sum(arm.quadrants.values()) == len(rows)
    assert set(arm.quadrants) == set(QUADRANTS)
    if arm.conditional_correctness is not None:
        assert 0.0 <= arm.conditional_correctness <= 1.0
    for est, ci in [(arm.tuning_speedup, arm.tuning_ci), (arm.gap, arm.gap_ci)]:
        if est is not None and ci is not None:
            assert ci[0] <= est * (1 + 1e-9) and est <= ci[1] * (1 + 1e-9)


@given(st.lists(st.tuples(st.sampled_from("abcd"), st.floats(0.2, 5.0)), min_size=1))
def test_same_speedup_on_both_shape_sets_means_no_gap(items: list[tuple[str, float]]) -> None:
    rows = [_row("x", task, s, s, True) for task, s in items]
    (arm,) = summarize(rows, n_boot=200)
    assert arm.gap == pytest.approx(1.0)
    assert arm.tuning_speedup == pytest.approx(arm.heldout_speedup)
    assert arm.quadrants["both_pass"] == len(rows)


def test_heldout_view(overfit_run: tuple[Path, str]) -> None:
    from aka.views import install_views

    path, rid = overfit_run
    with _open(path) as led:
        run_heldout(led, rid)
        con = install_views(led.connect())
        rows = con.execute(
            "SELECT role, task, correct FROM heldout WHERE run_id = ? ORDER BY role, correct",
            [rid],
        ).fetchall()
    assert rows == [
        ("baseline", "torch/ops/affine", True),
        ("candidate", "torch/ops/affine", False),
        ("candidate", "torch/ops/affine", True),
    ]
