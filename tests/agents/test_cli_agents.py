"""Claude Code, Codex and Cursor agents against fake CLIs replaying their documented streams."""

from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path

import pytest
from agent_helpers import Collect, make_request, wait_gone

from aka.agent import get_agent
from aka.errors import InputError

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="process checks read /proc"
)

FAST = {"kill_grace_seconds": 0.5, "contain": False}
"""Uncontained by default here: these tests follow the process tree by its pids, which a
PID namespace renumbers (the contained runs: ``test_a_contained_agent_leaves_nothing``)."""


def run(
    agent: str,
    workspace: Path,
    scenario: str = "ok",
    env: dict[str, str] | None = None,
    **settings: object,
):
    sink = Collect()
    settings.setdefault("timeout_seconds", 20.0)
    extra = {**FAST, **dict(settings.pop("options", {}) or {})}  # type: ignore[call-overload]
    request = make_request(
        workspace, env={"FAKE_SCENARIO": scenario, **(env or {})}, options=extra, **settings
    )
    outcome = get_agent(agent).run(request, sink)
    return outcome, sink


def names(sink: Collect, kind: str) -> list[str]:
    return [i.text for i in sink.of(kind)]


def test_claude_stream_becomes_items_and_outcome(
    fake_bin: Path, workspace: Path, tmp_path: Path
) -> None:
    argv_file, env_file = tmp_path / "argv.json", tmp_path / "env.json"
    outcome, sink = run(
        "claude_code",
        workspace,
        env={"FAKE_ARGV": str(argv_file), "FAKE_ENV": str(env_file)},
        model="opus",
        effort="high",
        max_iterations=7,
    )
    assert outcome.status == "ok" and outcome.exit_code == 0 and outcome.error is None
    assert (outcome.tokens_in, outcome.tokens_out, outcome.cost_usd) == (460, 120, 0.0421)
    assert outcome.model == "claude-sonnet-4-5-20250929"
    assert outcome.version == "2.0.14 (Claude Code)"
    assert names(sink, "tool_call") == ["Read", "Edit", "Bash"]
    assert [i.data["tool_use_id"] for i in sink.of("tool_result")] == [
        "toolu_1",
        "toolu_2",
        "toolu_3",
    ]
    assert "speedup: 1.80x" in sink.of("tool_result")[2].text
    assert names(sink, "file_edit") == ["/ws/kernel.py"]
    assert names(sink, "message") == [
        "I'll read the kernel first.",
        "Done: BLOCK_SIZE 1024 gives 1.80x.",
    ]
    assert len(sink.of("thinking")) == 1
    assert sink.of("usage")[0].data["cache_read_input_tokens"] == 300
    assert not any("stream_event" in json.dumps(dict(i.data)) for i in sink.items)
    assert outcome.transcript.count(b"\n") == 12 and not outcome.truncated
    env = json.loads(env_file.read_text())
    assert env["CLAUDE_CODE_EFFORT_LEVEL"] == "high"
    assert set(env) & {"AKA_LEDGER"} == set() and "AKA_AGENT_RUN" in env
    argv = json.loads(argv_file.read_text())
    assert argv[:8] == [
        "--print",
        "--verbose",
        "--output-format",
        "stream-json",
        "--include-partial-messages",
        "--permission-mode",
        "bypassPermissions",
        "--model",
    ]
    assert argv[8:] == ["opus", "--effort", "high", "--max-turns", "7", "Make softmax faster."]


def test_codex_stream_becomes_items_and_outcome(
    fake_bin: Path, workspace: Path, tmp_path: Path
) -> None:
    argv_file = tmp_path / "argv.json"
    outcome, sink = run(
        "codex",
        workspace,
        env={"FAKE_ARGV": str(argv_file)},
        model="gpt-5-codex",
        effort="high",
        max_iterations=3,
    )
    assert outcome.status == "ok" and outcome.exit_code == 0
    assert (outcome.tokens_in, outcome.tokens_out, outcome.cost_usd) == (24763, 122, None)
    assert outcome.model == "gpt-5-codex"  # the stream names none: the requested one
    assert outcome.version == "codex-cli 0.46.0"
    calls = sink.of("tool_call")
    assert [c.data["input"]["command"] for c in calls] == [
        "bash -lc 'cat kernel.py'",
        "bash -lc 'aka eval'",
    ]
    assert [r.data["exit_code"] for r in sink.of("tool_result")] == [0, 0]
    assert names(sink, "file_edit") == ["/ws/kernel.py"]
    assert names(sink, "message") == ["Raised BLOCK_SIZE to 1024; 1.50x faster."]
    assert names(sink, "thinking") == ["**Inspecting the kernel**"]
    assert any("max_iterations=3 ignored" in i.text for i in sink.of("log"))
    argv = json.loads(argv_file.read_text())
    assert argv[:6] == [
        "exec",
        "--json",
        "--dangerously-bypass-approvals-and-sandbox",
        "--skip-git-repo-check",
        "--cd",
        str(workspace),
    ]
    assert argv[6:] == [
        "--model",
        "gpt-5-codex",
        "-c",
        'model_reasoning_effort="high"',
        "Make softmax faster.",
    ]


def test_cursor_stream_becomes_items_and_outcome(
    fake_bin: Path, workspace: Path, tmp_path: Path
) -> None:
    argv_file = tmp_path / "argv.json"
    outcome, sink = run(
        "cursor", workspace, env={"FAKE_ARGV": str(argv_file)}, model="sonnet-4", effort="low"
    )
    assert outcome.status == "ok" and outcome.exit_code == 0
    assert (outcome.tokens_in, outcome.tokens_out, outcome.cost_usd) == (None, None, None)
    assert outcome.model == "Claude 4 Sonnet"
    assert names(sink, "message") == ["I'll read the kernel.", "Done."]
    assert names(sink, "thinking") == ["Let me look."]
    assert names(sink, "tool_call") == ["read", "write"]
    assert names(sink, "file_edit") == ["kernel.py"]
    assert [r.data["is_error"] for r in sink.of("tool_result")] == [False, False]
    assert any("effort='low' ignored" in i.text for i in sink.of("log"))
    argv = json.loads(argv_file.read_text())
    assert argv == [
        "--force",
        "--print",
        "--output-format",
        "stream-json",
        "--stream-partial-output",
        "--model",
        "sonnet-4",
        "Make softmax faster.",
    ]


AGENTS = ["claude_code", "codex", "cursor"]


@pytest.mark.parametrize("agent", AGENTS)
def test_malformed_lines_are_kept_as_logs_and_do_not_change_the_outcome(
    fake_bin: Path, workspace: Path, agent: str
) -> None:
    clean, clean_sink = run(agent, workspace)
    dirty, sink = run(agent, workspace, "malformed")
    assert dirty.status == "ok"
    assert (dirty.tokens_in, dirty.tokens_out, dirty.cost_usd, dirty.model) == (
        clean.tokens_in,
        clean.tokens_out,
        clean.cost_usd,
        clean.model,
    )
    assert [i for i in sink.items if i.kind != "log"] == [
        i for i in clean_sink.items if i.kind != "log"
    ]
    assert sink.ended()["malformed_lines"] == 1
    assert any(i.text == "plain text progress line" for i in sink.of("log"))


@pytest.mark.parametrize("agent", AGENTS)
def test_large_output_is_capped_and_flagged_but_fully_parsed(
    fake_bin: Path, workspace: Path, agent: str
) -> None:
    cap = 1 << 20
    outcome, sink = run(
        agent,
        workspace,
        "large",
        env={"FAKE_LINES": "3000", "FAKE_HUGE": "300000"},
        options={"max_transcript_bytes": cap, "max_line_bytes": 65536},
    )
    clean, _ = run(agent, workspace)
    assert outcome.status == "ok" and outcome.truncated
    head, _, _tail = outcome.transcript.partition(b" left out here; their blake3 is b3:")
    assert len(head) > cap // 2 and len(outcome.transcript) < cap + 200
    assert sink.ended()["long_lines"] == 1
    assert (outcome.tokens_in, outcome.tokens_out, outcome.model) == (
        clean.tokens_in,
        clean.tokens_out,
        clean.model,
    )


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("ignore_term", ["0", "1"])
def test_hang_is_stopped_at_the_timeout_with_its_children(
    fake_bin: Path, workspace: Path, tmp_path: Path, agent: str, ignore_term: str
) -> None:
    pids = tmp_path / "pids.json"
    outcome, sink = run(
        agent,
        workspace,
        "hang",
        env={"FAKE_PIDS": str(pids), "FAKE_IGNORE_TERM": ignore_term},
        timeout_seconds=2.0,
    )
    assert outcome.status == "timeout"
    assert outcome.exit_code == (-9 if ignore_term == "1" else -15)
    assert sink.of("error")[-1].data["status"] == "timeout"
    assert sink.ended()["processes_stopped"] == 2
    assert wait_gone(json.loads(pids.read_text())) == []


@pytest.mark.parametrize("agent", AGENTS)
def test_non_zero_exit_is_an_error_with_stderr(fake_bin: Path, workspace: Path, agent: str) -> None:
    outcome, sink = run(agent, workspace, "fail")
    assert outcome.status == "error" and outcome.exit_code == 3
    assert outcome.error is not None and "rate limited" in outcome.error
    assert sink.items[-1].kind == "error"


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("scenario", ["orphan", "setsid"])
def test_children_that_outlive_the_agent_are_stopped(
    fake_bin: Path, workspace: Path, tmp_path: Path, agent: str, scenario: str
) -> None:
    pids = tmp_path / "pids.json"
    outcome, sink = run(agent, workspace, scenario, env={"FAKE_PIDS": str(pids)})
    assert outcome.status == "ok"
    assert sink.ended()["processes_stopped"] == 1
    assert wait_gone(json.loads(pids.read_text())) == []


def test_missing_cli_is_an_error_that_says_how_to_install(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    sink = Collect()
    outcome = get_agent("codex").run(make_request(workspace), sink)
    assert outcome.status == "error" and outcome.exit_code is None
    assert outcome.error is not None and "npm install -g @openai/codex" in outcome.error


def test_extra_args_go_before_the_prompt(fake_bin: Path, workspace: Path, tmp_path: Path) -> None:
    argv_file = tmp_path / "argv.json"
    extra = {"args": ["--add-dir", "/data"]}
    run("claude_code", workspace, env={"FAKE_ARGV": str(argv_file)}, options=extra)
    assert json.loads(argv_file.read_text())[-3:] == ["--add-dir", "/data", "Make softmax faster."]


def test_extra_executable_overrides_the_path_lookup(
    fake_bin: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = str(fake_bin / "claude")
    monkeypatch.setenv("PATH", "/nonexistent")
    outcome, _ = run("claude_code", workspace, options={"executable": exe})
    assert outcome.status == "ok" and outcome.cost_usd == 0.0421


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"args": "--verbose"}, "options.args"),
        ({"max_line_bytes": "big"}, "options.max_line_bytes"),
    ],
)
def test_bad_extra_settings_are_input_errors(
    fake_bin: Path, workspace: Path, extra: dict, field: str
) -> None:
    with pytest.raises(InputError) as err:
        get_agent("claude_code").run(make_request(workspace, options=extra), Collect())
    assert err.value.where == field


def _carrying(token: str) -> list[int]:
    """Live processes (host pids) whose environment carries ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token.encode() in (entry / "environ").read_bytes():
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state not in ("Z", "X"):
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("scenario", ["hang", "orphan", "setsid"])
def test_a_contained_agent_leaves_nothing(
    fake_bin: Path, workspace: Path, tmp_path: Path, scenario: str
) -> None:
    """In its own PID namespace, what the agent left dies with the namespace's init."""
    token = f"AKA_TEST_TOKEN_{uuid.uuid4().hex}"
    outcome, sink = run(
        "claude_code",
        workspace,
        scenario,
        env={"FAKE_PIDS": str(tmp_path / "pids.json"), "TOKEN": token},
        timeout_seconds=2.0 if scenario == "hang" else 20.0,
        options={"contain": True},
    )
    containment = sink.ended()["containment"]
    if "own PID namespace" not in containment:
        pytest.skip(f"no PID namespace here: {containment}")
    assert containment.startswith("contained")
    assert outcome.status == ("timeout" if scenario == "hang" else "ok")
    if scenario == "hang":
        assert outcome.exit_code == -15 and sink.ended()["processes_stopped"] == 2
    deadline = time.monotonic() + 3.0
    while _carrying(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _carrying(token) == []
