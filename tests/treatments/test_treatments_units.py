"""Resolved arms, their diff, prompt templates, and each CLI adapter's MCP/tool format."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from treat_helpers import FIXTURE_TASKS

from aka.agent import AgentItem, AgentRequest, AgentSettings, McpServer
from aka.config import McpServerConfig, MemoryConfig
from aka.events import REGISTRY
from aka.prompt import PROMPT_FIELDS, build_prompt, render_prompt, template_fields
from aka.tasks import load_task
from aka.treatments import ResolvedArm, ResolvedFile, diff_arms, load_arm
from aka_agents._codex import codex_argv
from aka_agents._command import CommandAgent
from aka_agents._cursor import CursorAgent, cursor_argv
from aka_ledger import Ledger

SERVERS = {"search": McpServer("npx", ("-y", 'srv "q"'), {"API_URL": "http://x"})}
D1 = "b3:" + "1" * 64
D2 = "b3:" + "2" * 64


class Sink:
    def __init__(self) -> None:
        self.items: list[AgentItem] = []

    def emit(self, item: AgentItem) -> None:
        self.items.append(item)


def test_the_issue_example_sentence() -> None:
    a = ResolvedArm(agent="claude_code")
    b = a.model_copy(
        update={
            "mcp_servers": {"X": McpServerConfig(command="srv")},
            "files": [ResolvedFile(path="skills/Y.md", kind="file", digest=D1)],
        }
    )
    diff = diff_arms(a, b, label="B")
    assert (
        diff.summary()
        == "arm B adds MCP server 'X' and skill file 'skills/Y.md'; everything else identical"
    )
    assert diff_arms(b, a, label="A").summary() == (
        "arm A drops MCP server 'X' and skill file 'skills/Y.md'; everything else identical"
    )


def test_changed_contents_and_settings_are_named() -> None:
    a = ResolvedArm(
        agent="codex",
        model="m1",
        files=[ResolvedFile(path="AGENTS.md", kind="file", digest=D1)],
        memory=MemoryConfig(key="k"),
    )
    b = a.model_copy(
        update={
            "model": "m2",
            "files": [ResolvedFile(path="AGENTS.md", kind="file", digest=D2)],
            "env": {"A": "1"},
            "memory": None,
        }
    )
    assert diff_arms(a, b).summary() == (
        "arm B changes model from \"m1\" to \"m2\" and file 'AGENTS.md'; adds env 'A'; "
        "drops memory; everything else identical"
    )


def test_order_and_duplicates_count_as_differences() -> None:
    a = ResolvedArm(agent="claude_code", allowed_tools=["Read", "Edit"])
    b = a.model_copy(update={"allowed_tools": ["Edit", "Read"]})
    assert diff_arms(a, b).summary() == (
        "arm B changes the order of allowed tools; everything else identical"
    )
    c = a.model_copy(update={"allowed_tools": ["Read", "Edit", "Read"]})
    assert not diff_arms(a, c).identical


names = st.text("abcXYZ", min_size=1, max_size=4)
arms = st.builds(
    ResolvedArm,
    agent=st.sampled_from(["claude_code", "codex"]),
    model=st.none() | names,
    env=st.dictionaries(names, names, max_size=2),
    allowed_tools=st.lists(st.sampled_from(["Read", "Edit", "Bash"]), max_size=3),
    secret_env=st.lists(names, max_size=2, unique=True).map(sorted),
    mcp_servers=st.dictionaries(names, st.builds(McpServerConfig, command=names), max_size=2),
    files=st.lists(
        st.builds(ResolvedFile, path=names, kind=st.just("file"), digest=st.sampled_from([D1, D2])),
        max_size=2,
        unique_by=lambda f: f.path,
    ).map(lambda fs: sorted(fs, key=lambda f: f.path)),
    memory=st.none() | st.builds(MemoryConfig, key=names),
)


@settings(max_examples=200, deadline=None)
@given(arms, arms)
def test_diff_is_empty_exactly_when_the_digests_match(a: ResolvedArm, b: ResolvedArm) -> None:
    assert diff_arms(a, b).identical == (a.canonical_json() == b.canonical_json())
    assert diff_arms(a, a).identical


def test_resolved_arm_round_trips_and_old_plain_arms_load() -> None:
    cas = Ledger.memory(registry=REGISTRY).cas
    arm = ResolvedArm(agent="noop", env={"A": "1"}, memory=MemoryConfig(key="k"))
    assert load_arm(cas, cas.put(arm.canonical_json())) == arm
    old: dict[str, object] = {
        "name": "baseline",
        "agent": "noop",
        "model": None,
        "effort": None,
        "max_iterations": None,
        "timeout_seconds": 1800.0,
        "options": {},
    }
    assert load_arm(cas, cas.put(json.dumps(old).encode())) == ResolvedArm(agent="noop")


@pytest.fixture(scope="module")
def task():
    return load_task(FIXTURE_TASKS / "torch" / "ops" / "affine", root=FIXTURE_TASKS)


def test_template_fields_and_default(task) -> None:
    text = render_prompt(
        task,
        device="cpu",
        eval_command="aka eval",
        template="Task {task}: {instructions}\nFiles:\n{editable}\n\n{device_sheet}",
        extra_sections=["## Extra\n\nbe brief"],
    )
    assert text.startswith("Task affine: Make affine(x) faster.\nFiles:\n- `kernel.py`\n")
    assert "## Device: CPU (cpu)" in text and text.endswith("## Extra\n\nbe brief\n")
    wrapped = render_prompt(task, device="cpu", eval_command="aka eval", template="{default}")
    assert wrapped == build_prompt(task, device="cpu", eval_command="aka eval")


@given(st.from_regex(r"[a-z_]{1,12}", fullmatch=True))
def test_only_known_placeholders_are_accepted(name: str) -> None:
    if name in PROMPT_FIELDS:
        assert template_fields("{" + name + "}") == [name]
    else:
        with pytest.raises(ValueError, match="unknown placeholder"):
            template_fields("{" + name + "}")


def _request(ws: Path, **settings: object) -> AgentRequest:
    return AgentRequest(workspace=ws, prompt="go", settings=AgentSettings(**settings))  # type: ignore[arg-type]


def test_codex_takes_mcp_servers_as_toml_overrides(tmp_path: Path) -> None:
    argv, _ = codex_argv("codex", _request(tmp_path, mcp_servers=SERVERS))
    overrides = [argv[i + 1] for i, a in enumerate(argv) if a == "-c"]
    doc = tomllib.loads("\n".join(overrides))
    assert doc == {
        "mcp_servers": {
            "search": {"command": "npx", "args": ["-y", 'srv "q"'], "env": {"API_URL": "http://x"}}
        }
    }


def test_cursor_writes_its_project_mcp_and_permission_files(tmp_path: Path) -> None:
    from aka_agents._cursor import write_project_config

    req = _request(
        tmp_path, mcp_servers=SERVERS, allowed_tools=("Shell(ls)",), disallowed_tools=("Write(**)",)
    )
    assert write_project_config(req) == [".cursor/mcp.json", ".cursor/cli.json"]
    mcp = json.loads((tmp_path / ".cursor" / "mcp.json").read_text())
    assert mcp["mcpServers"]["search"]["args"] == ["-y", 'srv "q"']
    cli = json.loads((tmp_path / ".cursor" / "cli.json").read_text())
    assert cli == {"permissions": {"allow": ["Shell(ls)"], "deny": ["Write(**)"]}}
    argv, _ = cursor_argv("cursor-agent", req)
    assert "--approve-mcps" in argv
    assert "--approve-mcps" not in cursor_argv("cursor-agent", _request(tmp_path))[0]
    assert CursorAgent.treatments == {"mcp_servers", "allowed_tools", "disallowed_tools"}


def test_command_agent_gets_mcp_file_and_tool_lists(tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    script = tmp_path / "agent.py"
    script.write_text(
        "import json, sys\n"
        f"json.dump({{'mcp': json.load(open(sys.argv[1])), 'tools': sys.argv[2]}}, open({str(out)!r}, 'w'))\n"
    )
    extra = {"command": [sys.executable, str(script), "{mcp_config}", "{allowed_tools}"]}
    req = _request(tmp_path, options=extra, mcp_servers=SERVERS, allowed_tools=("Read", "Edit"))
    outcome = CommandAgent().run(req, Sink())
    assert outcome.status == "ok", outcome.error
    seen = json.loads(out.read_text())
    assert seen["tools"] == "Read,Edit"
    assert seen["mcp"]["mcpServers"]["search"]["command"] == "npx"
    assert CommandAgent().treatments_for(req.settings) == {"mcp_servers", "allowed_tools"}


def test_resume_uses_the_stored_contents_not_the_host_files(tmp_path: Path) -> None:
    from aka.config import parse_config
    from aka.tasks import select
    from aka.treatments import arm_difference, place_files, resolve_arms

    (tmp_path / "notes.md").write_text("v1\n")
    arm = {"name": "x", "agent": "noop", "files": [{"path": "NOTES.md", "source": "notes.md"}]}
    cfg = parse_config({"tasks": ["torch/ops/affine"], "arms": [arm]}, where="cfg.yaml")
    cas = Ledger.memory(registry=REGISTRY).cas
    tasks = select(FIXTURE_TASKS, cfg.tasks)
    digest = resolve_arms(cas, cfg, base_dir=tmp_path, tasks=tasks, where="cfg.yaml")["x"]
    (tmp_path / "notes.md").write_text("v2, edited after the run started\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    assert place_files(cas, load_arm(cas, digest), ws)
    assert (ws / "NOTES.md").read_text() == "v1\n"
    mixed = arm_difference(cas, [digest, D1], [digest], label="B")
    assert mixed["identical"] is None and "side A ran 2 arm configuration(s)" in mixed["summary"]
    assert arm_difference(cas, [digest], [digest, None])["identical"] is True
    api_arm = cas.put(b'{"name": "external"}')  # what aka.api records: not a resolved arm
    assert arm_difference(cas, [digest], [api_arm])["identical"] is None


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.sampled_from(["AGENTS.md", "CLAUDE.md", "docs/a.md", "skills/x.md"]),
        min_size=1,
        max_size=4,
        unique=True,
    ),
    st.randoms(use_true_random=False),
)
def test_resolution_is_content_addressed(paths: list[str], rnd) -> None:
    """Same contents give the same digest whatever the host folder or the list order."""
    import tempfile

    from aka.config import parse_config
    from aka.tasks import select
    from aka.treatments import resolve_arms

    cas = Ledger.memory(registry=REGISTRY).cas
    tasks = select(FIXTURE_TASKS, ["torch/ops/affine"])
    digests = []
    for order in (paths, rnd.sample(paths, len(paths))):
        with tempfile.TemporaryDirectory() as tmp:
            files = []
            for i, dest in enumerate(order):
                (Path(tmp) / f"src{i}").write_text(f"contents of {dest}\n")
                files.append({"path": dest, "source": f"src{i}"})
            arm = {"name": "x", "agent": "noop", "files": files}
            cfg = parse_config({"tasks": ["torch/ops/affine"], "arms": [arm]}, where="c")
            digests.append(resolve_arms(cas, cfg, base_dir=Path(tmp), tasks=tasks, where="c")["x"])
    assert digests[0] == digests[1]


@pytest.mark.parametrize("name", ["codex", "cursor"])
def test_fake_cli_receives_mcp_servers_tools_and_env(
    name: str, recording_bin: Path, tmp_path: Path
) -> None:
    from treat_helpers import calls

    from aka.agent import get_agent

    ws = tmp_path / "ws"
    ws.mkdir()
    tools = {"allowed_tools": ("Shell(ls)",)} if name == "cursor" else {}
    req = AgentRequest(
        workspace=ws,
        prompt="go",
        settings=AgentSettings(mcp_servers=SERVERS, **tools),  # type: ignore[arg-type]
        env={"TREAT_FLAG": "on"},
    )
    outcome = get_agent(name).run(req, Sink())
    assert outcome.status == "ok", outcome.error
    (call,) = calls(recording_bin)
    assert call["env"]["TREAT_FLAG"] == "on"
    if name == "codex":
        assert 'mcp_servers.search.command="npx"' in call["argv"]
    else:
        assert "--approve-mcps" in call["argv"]
        assert (
            json.loads(call["texts"][".cursor/mcp.json"])["mcpServers"]["search"]["command"]
            == "npx"
        )
        assert json.loads(call["texts"][".cursor/cli.json"])["permissions"]["allow"] == [
            "Shell(ls)"
        ]
