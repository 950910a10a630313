"""End to end on the CPU: run, report, audit, forgery, bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from arena_helpers import write_config

from aka.agent import (
    AgentItem,
    AgentOptions,
    AgentOutcome,
    AgentRequest,
    AgentSink,
    register_agent,
)

FAST_KERNEL = "import torch\n\n\ndef affine(x):\n    return torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))\n"
WRONG_KERNEL = "def affine(x):\n    return x * 2\n"


class ForgerOptions(AgentOptions):
    wrong: bool = False


@register_agent("test_forger")
class ForgerAgent:
    """Writes a correct kernel plus every forgery it can think of."""

    name = "test_forger"
    Options = ForgerOptions

    def run(self, request: AgentRequest, sink: AgentSink) -> AgentOutcome:
        ws = request.workspace
        (ws / "kernel.py").write_text(
            WRONG_KERNEL if request.settings.options.get("wrong") else FAST_KERNEL
        )
        (ws / "result.json").write_text(
            json.dumps({"score": 1e9, "speedup": 1000, "correct": True})
        )
        (ws / "reference.py").write_text(
            "def make_inputs(*a, **k):\n    raise SystemExit\n\ndef reference(x):\n    return x * 2\n"
        )
        (ws / "torch.py").write_text("raise SystemExit('shadowed torch')\n")
        sink.emit(AgentItem(kind="message", text="forged everything"))
        return AgentOutcome(status="ok", exit_code=0)


def _report(cli: Callable[..., object], ledger: Path) -> list[dict[str, object]]:
    res = cli("report", "--ledger", str(ledger), "--format", "json")
    assert res.code == 0, res.err
    return json.loads(res.out)


def test_noop_run_reports_every_column_and_speedup_near_one(
    cli, tmp_path, tasks_root, ledger_dir
) -> None:
    cfg = write_config(tmp_path, tasks_root, repeats=2)
    res = cli("run", str(cfg), "--ledger", str(ledger_dir))
    assert res.code == 0, res.err
    rows = _report(cli, ledger_dir)
    assert len(rows) == 2
    for row in rows:
        assert row["compiled"] is True and row["correct"] is True
        assert 0.5 < row["speedup"] < 2.0  # A/A on a shared CPU: ~1 within noise
        assert row["score"] == pytest.approx(120 + 100 * row["speedup"])
        assert str(row["candidate"]).startswith("b3:")
    assert cli("ledger", "verify", "--ledger", str(ledger_dir)).code == 0


def test_forgery_has_no_effect(cli, tmp_path, tasks_root, ledger_dir) -> None:
    cfg = write_config(tmp_path, tasks_root, arms=[{"name": "f", "agent": "test_forger"}])
    assert cli("run", str(cfg), "--ledger", str(ledger_dir)).code == 0
    (row,) = _report(cli, ledger_dir)
    # The real kernel is correct: it earns a correct score, not the forged 1e9, and the
    # edited reference and shadowing torch.py never reach the evaluation.
    assert row["correct"] is True and row["score"] < 1000
    wrong = write_config(
        tmp_path,
        tasks_root,
        arms=[{"name": "w", "agent": "test_forger", "options": {"wrong": True}}],
        name="w.yaml",
    )
    assert cli("run", str(wrong), "--ledger", str(ledger_dir)).code == 0
    (row,) = _report(cli, ledger_dir)
    assert row["compiled"] is True and row["correct"] is False and row["score"] == 20.0


def test_audit_reproduces_the_evaluated_bytes(cli, tmp_path, tasks_root, ledger_dir) -> None:
    cfg = write_config(tmp_path, tasks_root, arms=[{"name": "f", "agent": "test_forger"}])
    assert cli("run", str(cfg), "--ledger", str(ledger_dir)).code == 0
    (row,) = _report(cli, ledger_dir)
    out = tmp_path / "exported"
    res = cli(
        "audit",
        str(row["attempt_key"]),
        "--ledger",
        str(ledger_dir),
        "--diff",
        "--export",
        str(out),
        "--format",
        "json",
    )
    assert res.code == 0, res.err
    assert (out / "kernel.py").read_text() == FAST_KERNEL
    assert sorted(p.name for p in out.iterdir()) == [
        "kernel.py"
    ]  # only editable files were evaluated
    assert "+    return torch.addcmul" in res.out
    assert '"verified": true' in res.out and '"verified": false' not in res.out


def test_replay_rescores_an_exported_candidate(cli, tmp_path, tasks_root, ledger_dir) -> None:
    src = tmp_path / "kept"
    src.mkdir()
    (src / "kernel.py").write_text(FAST_KERNEL)
    cfg = write_config(
        tmp_path,
        tasks_root,
        arms=[{"name": "r", "agent": "replay", "options": {"source": str(src)}}],
    )
    assert cli("run", str(cfg), "--ledger", str(ledger_dir)).code == 0
    (row,) = _report(cli, ledger_dir)
    assert row["correct"] is True


@pytest.mark.parametrize(
    ("mutate", "expect"),
    [
        (lambda cfg, root: cfg.write_text("label: [unclosed\n"), "malformed YAML"),
        (
            lambda cfg, root: cfg.write_text(cfg.read_text() + "colour: blue\n"),
            "field 'colour': unknown key",
        ),
        (
            lambda cfg, root: cfg.write_text(
                cfg.read_text().replace("torch/ops/affine", "torch/nope")
            ),
            "matches no task",
        ),
        (lambda cfg, root: (root / "torch/ops/affine/reference.py").unlink(), "field 'reference'"),
        (
            lambda cfg, root: cfg.write_text(
                cfg.read_text().replace("agent: noop", "agent: gpt-magic")
            ),
            "unknown agent 'gpt-magic'",
        ),
    ],
    ids=["yaml", "unknown-key", "selector", "missing-reference", "unknown-agent"],
)
def test_bad_input_exits_2_and_records_nothing(
    cli, tmp_path, tasks_root, ledger_dir, mutate, expect
) -> None:
    cfg = write_config(tmp_path, tasks_root)
    mutate(cfg, tasks_root)
    res = cli("run", str(cfg), "--ledger", str(ledger_dir))
    assert res.code == 2
    assert expect in res.err and "fix:" in res.err and "Traceback" not in res.err
    status = cli("status", "--ledger", str(ledger_dir), "--format", "json")
    assert status.code == 2 or json.loads(status.out) == []  # no run recorded
