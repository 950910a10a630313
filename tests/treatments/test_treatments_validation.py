"""Bad treatments are refused before any work, with file, field and fix; no run is recorded."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from treat_helpers import run_count, write_run

CLAUDE = {"name": "x", "agent": "claude_code"}


def _refused(cli, tmp_path: Path, tasks_root: Path, arm: dict[str, Any], **extra: Any) -> str:
    cfg = write_run(tmp_path, tasks_root, [arm], **extra)
    ledger = tmp_path / "ledger"
    res = cli("run", str(cfg), "--ledger", str(ledger))
    assert res.code == 2, (res.out, res.err)
    assert "Traceback" not in res.err
    assert run_count(ledger) == 0
    assert str(cfg) in res.err and "fix:" in res.err
    return res.err


@pytest.mark.parametrize(
    ("arm", "expect"),
    [
        ({**CLAUDE, "mcp_server": {}}, "field 'arms.0.mcp_server': unknown key"),
        ({**CLAUDE, "memory": {"key": "m", "across": True}}, "arms.0.memory.across"),
        ({**CLAUDE, "files": [{"path": "A.md"}]}, "exactly one of `source` or `content`"),
        (
            {**CLAUDE, "files": [{"path": "A.md", "source": "nope.md"}]},
            "field 'files.0.source'",
        ),
        (
            {**CLAUDE, "files": [{"path": "kernel.py", "content": "x = 1"}]},
            "would overwrite the task's file(s) ['kernel.py']",
        ),
        ({**CLAUDE, "files": [{"path": "../up.md", "content": "x"}]}, "not a path inside"),
        (
            {**CLAUDE, "memory": {"key": "m"}, "files": [{"path": ".memory/a", "content": "x"}]},
            "'.memory/a' overlaps memory '.memory'",
        ),
        (
            {"name": "x", "agent": "noop", "mcp_servers": {"s": {"command": "srv"}}},
            "agent 'noop' cannot take mcp_servers",
        ),
        (
            {
                "name": "x",
                "agent": "replay",
                "options": {"source": "kept/"},
                "allowed_tools": ["Read"],
            },
            "agent 'replay' cannot take allowed_tools",
        ),
        (
            {"name": "x", "agent": "codex", "disallowed_tools": ["Bash"]},
            "agent 'codex' cannot take disallowed_tools",
        ),
        (
            {
                "name": "x",
                "agent": "command",
                "options": {"command": ["my-agent", "{prompt_file}"]},
                "mcp_servers": {"s": {"command": "srv"}},
            },
            "agent 'command' cannot take mcp_servers",
        ),
        ({**CLAUDE, "mcp_servers": {"a.b": {"command": "srv"}}}, "MCP server name 'a.b'"),
        ({**CLAUDE, "secret_env": ["TREAT_UNSET_SECRET"]}, "not set in this environment"),
        ({**CLAUDE, "env": {"AKA_LEDGER": "/x"}}, "'AKA_LEDGER' is not a usable variable name"),
        ({**CLAUDE, "prompt": {"template": "{task} {oops}"}}, "unknown placeholder {oops}"),
        (
            {**CLAUDE, "prompt": {"template_file": "missing.md"}},
            "field 'prompt.template_file'",
        ),
    ],
)
def test_bad_treatment_is_refused(cli, tmp_path, tasks_root, monkeypatch, arm, expect) -> None:
    monkeypatch.delenv("TREAT_UNSET_SECRET", raising=False)
    err = _refused(cli, tmp_path, tasks_root, arm)
    assert expect in err, err


def test_memory_needs_the_inline_runner(cli, tmp_path, tasks_root) -> None:
    arm = {"name": "m", "agent": "noop", "memory": {"key": "notes"}}
    err = _refused(cli, tmp_path, tasks_root, arm, runner={"kind": "local", "workers": 2})
    assert "field 'memory'" in err and "runner is 'local'" in err


def test_command_agent_with_placeholders_takes_mcp_and_tools(tmp_path, tasks_root) -> None:
    from aka.config import parse_config
    from aka.events import REGISTRY
    from aka.tasks import select
    from aka.treatments import resolve_arms
    from aka_ledger import Ledger

    arm = {
        "name": "x",
        "agent": "command",
        "options": {"command": [sys.executable, "{mcp_config}", "{allowed_tools}"]},
        "mcp_servers": {"s": {"command": "srv"}},
        "allowed_tools": ["Read"],
    }
    cfg = parse_config({"tasks": ["torch/ops/affine"], "arms": [arm]}, where="cfg.yaml")
    tasks = select(tasks_root, cfg.tasks)
    out = resolve_arms(
        Ledger.memory(registry=REGISTRY).cas, cfg, base_dir=tmp_path, tasks=tasks, where="cfg"
    )
    assert set(out) == {"x"}


def test_check_runner_for_a_resume_with_another_runner() -> None:
    from aka.config import parse_config
    from aka.errors import InputError
    from aka.treatments import check_runner

    raw = {"tasks": ["t"], "arms": [{"name": "m", "agent": "noop", "memory": {"key": "k"}}]}
    with_memory = parse_config(raw, where="c")
    check_runner(with_memory, "inline", where="--runner")
    with pytest.raises(InputError, match="memory needs attempts in planned order"):
        check_runner(with_memory, "local", where="--runner")
    plain = parse_config({"tasks": ["t"], "arms": [{"name": "p", "agent": "noop"}]}, where="c")
    check_runner(plain, "slurm", where="--runner")


def test_a_secret_gone_before_resume_fails_the_try_before_the_agent(
    tmp_path: Path, tasks_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aka import events as ev
    from aka.config import load_config
    from aka.events import REGISTRY
    from aka.orchestrator import drive, start_run
    from aka_ledger import Ledger

    monkeypatch.setenv("TREAT_GONE", "v")
    arm = {"name": "s", "agent": "noop", "secret_env": ["TREAT_GONE"]}
    cfg = write_run(tmp_path, tasks_root, [arm], max_tries=1)
    led = Ledger.open(tmp_path / "ledger", registry=REGISTRY, create=True)
    try:
        rid = start_run(led, load_config(cfg), config_path=str(cfg), run_id="gone")
        monkeypatch.delenv("TREAT_GONE")
        drive(led, rid)
        types = [e.type for e in led.events(run_id=rid)]
        assert "AgentStarted" not in types
        (done,) = [e.payload for e in led.events(run_id=rid, types=["AttemptFinished"])]
        assert isinstance(done, ev.AttemptFinished) and done.status == "error"
        assert "TREAT_GONE" in (done.error or "")
    finally:
        led.close()
