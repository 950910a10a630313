"""Every kind of treatment reaches a CLI agent, is recorded by digest, and is what compare reports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from treat_helpers import FIXTURE_TASKS, calls, install_recorders, open_ledger, write_run

from aka import events as ev
from aka.cli import main
from aka.treatments import load_arm

SECRET = "s3cr3t-value-never-recorded"
HINT = "## Hint\n\nPrefer fewer launches."


@pytest.fixture(scope="module")
def treated_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """One `aka run` with a plain Claude Code arm and one with every treatment."""
    tmp = tmp_path_factory.mktemp("treated")
    tasks_root = tmp / "tasks"
    shutil.copytree(FIXTURE_TASKS, tasks_root)
    skills = tmp / "skills_src"
    (skills / "triton").mkdir(parents=True)
    (skills / "triton" / "SKILL.md").write_text("# Triton tiling\nUse BLOCK_SIZE 1024.\n")
    base = {"name": "base", "agent": "claude_code", "timeout_seconds": 120}
    treated = {
        **base,
        "name": "treated",
        "prompt": {"extra_sections": [HINT]},
        "files": [
            {"path": "AGENTS.md", "content": "Measure before you change.\n"},
            {"path": "skills", "source": "skills_src"},
        ],
        "mcp_servers": {
            "search": {"command": "python3", "args": ["-m", "srv"], "env": {"MODE": "x"}}
        },
        "allowed_tools": ["Read", "Edit"],
        "disallowed_tools": ["WebFetch"],
        "env": {"TREAT_FLAG": "on"},
        "secret_env": ["TREAT_SECRET"],
    }
    cfg = write_run(tmp, tasks_root, [base, treated])
    ledger = tmp / "ledger"
    with pytest.MonkeyPatch.context() as mp:
        record = install_recorders(tmp, mp)
        mp.setenv("TREAT_SECRET", SECRET)
        mp.delenv("AKA_LEDGER", raising=False)
        with pytest.raises(SystemExit) as done:
            main(["run", str(cfg), "--ledger", str(ledger), "--run-id", "ab"])
        assert done.value.code in (0, None)
    return ledger, calls(record)


def _by_arm(recorded: list[dict]) -> dict[str, dict]:
    out = {}
    for call in recorded:
        out["treated" if call["env"].get("TREAT_FLAG") else "base"] = call
    return out


def test_each_treatment_reaches_the_agent(treated_run) -> None:
    _, recorded = treated_run
    got = _by_arm(recorded)
    assert set(got) == {"base", "treated"}
    base, treated = got["base"], got["treated"]
    # files placed before the agent started
    assert "AGENTS.md" in treated["files"] and "skills/triton/SKILL.md" in treated["files"]
    assert treated["texts"]["AGENTS.md"] == "Measure before you change.\n"
    assert not {"AGENTS.md", "skills/triton/SKILL.md"} & set(base["files"])
    # MCP servers in Claude Code's --mcp-config format, tool lists as flags
    assert treated["mcp"] == {
        "mcpServers": {
            "search": {"command": "python3", "args": ["-m", "srv"], "env": {"MODE": "x"}}
        }
    }
    argv = treated["argv"]
    # the ``=`` form: these flags are variadic and would otherwise swallow the prompt
    assert "--allowedTools=Read,Edit" in argv and "--disallowedTools=WebFetch" in argv
    assert not [a for a in base["argv"] if a.startswith(("--mcp", "--allowed", "--disallowed"))]
    # environment: plain and secret values set for the agent
    assert treated["env"]["TREAT_FLAG"] == "on" and treated["env"]["TREAT_SECRET"] == SECRET
    # prompt: the extra section is the prompt's last part
    assert argv[-1].rstrip().endswith("Prefer fewer launches.")
    assert "Prefer fewer launches." not in base["argv"][-1]


def test_treatments_are_recorded_by_digest_and_secrets_never(treated_run) -> None:
    ledger, _ = treated_run
    led = open_ledger(ledger)
    try:
        (started,) = [e.payload for e in led.events(run_id="ab", types=["RunStarted"])]
        assert isinstance(started, ev.RunStarted)
        arm = load_arm(led.cas, started.arms["treated"])
        assert arm.secret_env == ["TREAT_SECRET"] and arm.env == {"TREAT_FLAG": "on"}
        files = {f.path: f for f in arm.files}
        assert led.cas.get(files["AGENTS.md"].digest) == b"Measure before you change.\n"
        tree = {e.path: e for e in led.cas.read_tree(files["skills"].digest)}
        assert led.cas.get(tree["triton/SKILL.md"].digest).startswith(b"# Triton tiling")
        by_attempt = {
            e.attempt_key: e.payload for e in led.events(run_id="ab", types=["AgentStarted"])
        }
        assert by_attempt["torch/ops/affine#treated#0"].arm == started.arms["treated"]
        assert by_attempt["torch/ops/affine#base#0"].arm == started.arms["base"]
        assert started.arms["treated"] != started.arms["base"]
        # the starting workspace tree includes the placed files
        (ws,) = [
            e.payload
            for e in led.events(run_id="ab", types=["WorkspaceMaterialized"])
            if e.attempt_key == "torch/ops/affine#treated#0"
        ]
        paths = {e.path for e in led.cas.read_tree(ws.tree)}
        assert {"AGENTS.md", "skills/triton/SKILL.md", "kernel.py"} <= paths
    finally:
        led.close()
    for blob in ledger.rglob("*"):
        if blob.is_file():
            assert SECRET.encode() not in blob.read_bytes(), blob


def test_report_shows_the_arm_digest(cli, treated_run) -> None:
    ledger, _ = treated_run
    led = open_ledger(ledger)
    (started,) = [e.payload for e in led.events(run_id="ab", types=["RunStarted"])]
    led.close()
    res = cli("report", "ab", "--ledger", str(ledger), "--format", "json")
    rows = json.loads(res.out)
    assert {r["arm"]: r["arm_digest"] for r in rows} == started.arms


def test_compare_states_exactly_what_differs(cli, treated_run) -> None:
    ledger, _ = treated_run
    res = cli("compare", "ab/base", "ab/treated", "--ledger", str(ledger), "--format", "json")
    assert res.code == 0, res.err
    assert res.out.strip(), res.err
    arms = json.loads(res.out)["arms"]
    assert arms["identical"] is False
    assert {(c["field"], c["change"], c["item"]) for c in arms["changes"]} == {
        ("prompt", "adds", repr(HINT[:40])),
        ("files", "adds", "'AGENTS.md'"),
        ("files", "adds", "'skills'"),
        ("mcp_servers", "adds", "'search'"),
        ("allowed_tools", "adds", "'Read'"),
        ("allowed_tools", "adds", "'Edit'"),
        ("disallowed_tools", "adds", "'WebFetch'"),
        ("env", "adds", "'TREAT_FLAG'"),
        ("secret_env", "adds", "'TREAT_SECRET'"),
    }
    table = cli("compare", "ab/base", "ab/treated", "--ledger", str(ledger))
    line = next(ln for ln in table.out.splitlines() if ln.startswith("arms: "))
    assert line.startswith("arms: arm treated adds ")
    assert "MCP server 'search'" in line and "skill directory 'skills'" in line
    assert line.endswith("; everything else identical")
