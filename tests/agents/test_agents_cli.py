"""``aka agents list`` and ``aka agents check`` against fake CLIs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aka.cli._app import _load, app

_load()
runner = CliRunner()


def rows(*args: str) -> tuple[int, list[dict]]:
    result = runner.invoke(app, [*args, "--format", "json"])
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip().startswith(
        "["
    ) else []


def test_list_shows_every_registered_agent() -> None:
    code, listed = rows("agents", "list")
    assert code == 0
    names = {r["name"] for r in listed}
    assert {"claude_code", "codex", "cursor", "command", "mini_swe"} <= names


def test_check_reports_installed_version_and_login(
    fake_bin: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "CLAUDE_CONFIG_DIR",
        "OPENAI_API_KEY",
        "CODEX_API_KEY",
        "CURSOR_API_KEY",
        "CLAUDE_CODE_USE_BEDROCK",
        "CLAUDE_CODE_USE_VERTEX",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("FAKE_AUTH", "ok")
    code, checks = rows("agents", "check", "codex", "cursor")
    assert code == 0
    assert [(c["installed"], c["version"], c["authenticated"]) for c in checks] == [
        (True, "codex-cli 0.46.0", True),
        (True, "2025.10.02-fake", True),
    ]
    monkeypatch.setenv("FAKE_AUTH", "no")
    code, checks = rows("agents", "check", "codex", "claude_code")
    assert code == 1
    assert [c["authenticated"] for c in checks] == [False, False]
    assert "codex login" in checks[0]["message"] and "ANTHROPIC_API_KEY" in checks[1]["message"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    code, checks = rows("agents", "check", "claude_code")
    assert code == 0 and checks[0]["ready"] and checks[0]["version"] == "2.0.14 (Claude Code)"


def test_check_without_cli_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    code, checks = rows("agents", "check", "cursor")
    assert code == 1 and not checks[0]["installed"] and "install" in checks[0]["message"]


def test_check_unknown_agent_is_an_input_error() -> None:
    from aka.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["agents", "check", "no_such_agent"])
    assert exc.value.code == 2
