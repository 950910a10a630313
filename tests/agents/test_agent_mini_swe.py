"""mini-swe-agent through a fake ``mini`` CLI that writes a documented trajectory file."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from agent_helpers import Collect, make_request

from aka.agent import get_agent
from aka_agents._mini_swe import _with_env


def test_mini_swe_reads_trajectory_for_cost_and_tokens(
    fake_bin: Path, workspace: Path, tmp_path: Path
) -> None:
    argv_file = tmp_path / "argv.json"
    sink = Collect()
    request = make_request(
        workspace,
        env={"FAKE_ARGV": str(argv_file)},
        model="openai/qwen3-coder",
        max_iterations=5,
        options={"api_base": "http://localhost:8000/v1", "cost_limit": 2},
    )
    outcome = get_agent("mini_swe").run(request, sink)
    assert outcome.status == "ok" and outcome.exit_code == 0
    assert (outcome.tokens_in, outcome.tokens_out, outcome.cost_usd) == (2200, 80, 0.0123)
    assert outcome.model == "openai/qwen3-coder"
    assert outcome.version == "1.17.0"
    assert len(sink.of("message")) == 2 and len(sink.of("tool_result")) == 1
    argv = json.loads(argv_file.read_text())
    assert argv[:3] == ["--yolo", "--exit-immediately", "--task"]
    assert argv[argv.index("--model") + 1] == "openai/qwen3-coder"
    assert argv[argv.index("--cost-limit") + 1] == "2"
    assert any("max_iterations=5 ignored" in i.text for i in sink.of("log"))


def test_mini_swe_passes_a_local_server_through_the_environment(workspace: Path) -> None:
    request = make_request(
        workspace,
        env={"MSWEA_CONFIGURED": "false"},
        options={"api_base": "http://localhost:8000/v1"},
    )
    env = _with_env(request).env
    assert env["OPENAI_API_BASE"] == env["OPENAI_BASE_URL"] == "http://localhost:8000/v1"
    assert env["MSWEA_COST_TRACKING"] == "ignore_errors"
    assert env["MSWEA_CONFIGURED"] == "false"  # the request's own value wins


@pytest.mark.skipif(
    importlib.util.find_spec("minisweagent") is not None, reason="mini-swe-agent is installed"
)
def test_check_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    check = get_agent("mini_swe").check()  # type: ignore[attr-defined]
    assert not check.installed and "pip install mini-swe-agent" in check.message
