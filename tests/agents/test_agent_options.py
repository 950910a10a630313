"""Each agent's options are a typed model; a config's wrong options are refused at run start.

Before the models, ``options:`` reached agents as an untyped dict: a misspelt key was
silently ignored (the arm ran without the setting) and a wrong type failed inside the
attempt. Now ``aka run`` refuses the config before recording anything, naming the
file, the arm, the agent, the key and the keys the agent takes.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from aka.agent import AgentOptions, AgentSettings, agent_names, check_options, get_agent
from aka.agent import options_model as model_of
from aka.errors import InputError
from aka_ledger import Ledger

DOCS = Path(__file__).resolve().parents[2] / "docs" / "agents.md"
BUILT_IN = ["autotune", "claude_code", "codex", "command", "cursor", "mini_swe", "noop", "replay"]


def _config(tmp_path: Path, tasks_root: Path, arms_yaml: str) -> Path:
    """A run config as a user writes it: comments, flow and block style mixed."""
    path = tmp_path / "ab.yaml"
    path.write_text(
        f"# an A/B over the fixture task\nlabel: ab\ntasks:\n  - torch/ops/affine\n"
        f"tasks_root: {tasks_root}\ndevice: cpu\ntiming: {{max_time_s: 0.2, min_samples: 3}}\n"
        "arms:\n  - name: baseline\n    agent: noop\n"
        + textwrap.indent(textwrap.dedent(arms_yaml), "  ")
    )
    return path


def _refused(cli, tmp_path: Path, tasks_root: Path, arms_yaml: str) -> str:
    cfg = _config(tmp_path, tasks_root, arms_yaml)
    ledger = tmp_path / "ledger"
    res = cli("run", str(cfg), "--ledger", str(ledger))
    assert res.code == 2, (res.out, res.err)
    assert "Traceback" not in res.err
    assert str(cfg) in res.err and "fix:" in res.err
    if ledger.exists():
        led = Ledger.open(ledger, registry=_registry(), create=False)
        try:
            assert led.events(types=["RunStarted"]) == []
        finally:
            led.close()
    return res.err


def _registry():
    from aka.events import REGISTRY

    return REGISTRY


CLI_KEYS = "args, contain, env, executable, kill_grace_seconds, max_line_bytes, max_transcript_bytes"


@pytest.mark.parametrize(
    ("arms_yaml", "expect"),
    [
        (  # a misspelt key and one copied from another tool's config
            """\
            - name: treatment
              agent: claude_code
              model: claude-sonnet-4-5
              options:
                arg: ["--verbose"]     # meant: args
                max_turns: 30
            """,
            [
                "arm 'treatment', field 'options.arg'",
                "agent 'claude_code' has no option 'arg', 'max_turns'",
                f"it takes {CLI_KEYS}",
            ],
        ),
        (  # the old documentation's spelling of the command agent's options
            """\
            - name: mine
              agent: command
              options:
                cmd: my-agent --prompt {prompt_file}
            """,
            ["field 'options.cmd'", "agent 'command' has no option 'cmd'", "command, contain, env"],
        ),
        (  # a command line written as one string
            """\
            - name: mine
              agent: command
              options: {command: "my-agent --prompt {prompt_file}"}
            """,
            ["field 'options.command'", "agent 'command' option 'command'", "valid list"],
        ),
        (  # a placeholder typo
            """\
            - name: mine
              agent: command
              options:
                command: [my-agent, --prompt, "{promptfile}"]
            """,
            ["field 'options.command'", "unknown placeholder {promptfile}"],
        ),
        (
            """\
            - name: local
              agent: mini_swe
              model: openai/qwen
              options: {api_base: "http://localhost:8000/v1", cost_limit: two dollars}
            """,
            ["field 'options.cost_limit'", "agent 'mini_swe' option 'cost_limit'", "--cost-limit"],
        ),
        (  # the control switch belongs to noop
            """\
            - name: search
              agent: autotune
              options: {control: true}
            """,
            ["agent 'autotune' has no option 'control'", "it takes no options"],
        ),
        (
            """\
            - name: again
              agent: replay
              options: {}
            """,
            ["field 'options'", "replay needs options.source", "it takes patch, source"],
        ),
        (
            """\
            - name: typo
              agent: claude-code
            """,
            ["field 'agent'", "unknown agent 'claude-code'"],
        ),
    ],
)
def test_wrong_options_are_refused_before_the_run_starts(
    cli, tmp_path: Path, tasks_root: Path, arms_yaml: str, expect: list[str]
) -> None:
    err = _refused(cli, tmp_path, tasks_root, arms_yaml)
    for part in expect:
        assert part in err, err


def test_messy_but_valid_options_pass_and_keep_their_values() -> None:
    opts = check_options(
        "mini_swe",
        {
            "api_base": "http://localhost:8000/v1",
            "cost_limit": 2,  # an int where a float is meant
            "args": ["--config", "mini.yaml"],
            "env": {"OPENAI_API_KEY": "none", "LITELLM_LOG": "ERROR", "WORKERS": 4},
            "max_line_bytes": 1048576,
        },
        where="run.yaml: arm 'local'",
    )
    assert opts.model_dump()["cost_limit"] == 2.0
    assert check_options("noop", {"control": True}, where="x").model_dump() == {"control": True}
    assert check_options("autotune", {}, where="x").model_dump() == {}


def test_every_built_in_agent_declares_its_options_and_the_docs_name_them() -> None:
    assert set(BUILT_IN) <= set(agent_names())
    docs = DOCS.read_text()
    for name in BUILT_IN:
        model = model_of(get_agent(name))
        assert issubclass(model, AgentOptions)
        assert model.model_config.get("extra") == "forbid", name
        for key in model.model_fields:
            assert re.search(rf"`options\.{key}`", docs), f"docs/agents.md: options.{key} ({name})"


def test_an_option_error_at_run_time_names_the_options_key() -> None:
    with pytest.raises(InputError) as err:
        check_options("claude_code", {"args": "--verbose"}, where="run.yaml: arm 'b'")
    assert err.value.where == "run.yaml: arm 'b', field 'options.args'"
    assert "a list of strings" in str(err.value.fix)


def test_the_old_settings_name_still_reads_with_a_warning() -> None:
    settings = AgentSettings(options={"args": ["-v"]})
    with pytest.warns(DeprecationWarning, match=r"AgentSettings\.options"):
        assert settings.extra == {"args": ["-v"]}
