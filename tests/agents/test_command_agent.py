"""The command agent: templated argv, prompt file outside the workspace, JSON-lines stdout."""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
from pathlib import Path

import pytest
from agent_helpers import FAKES, Collect, make_request

from aka.agent import AgentItem, get_agent
from aka.errors import InputError

SCRIPT = """
import json, os, sys
prompt_file, workspace, model = sys.argv[1:4]
print(json.dumps({"kind": "message", "text": "read " + str(len(open(prompt_file).read())) + " chars"}))
print("plain progress")
print(json.dumps({"kind": "file_edit", "text": "kernel.py", "data": {"path": "kernel.py"}}))
open(os.path.join(workspace, "kernel.py"), "w").write("BLOCK_SIZE = 1024\\n")
print(json.dumps({"kind": "usage", "data": {"tokens_in": 42, "tokens_out": 5, "cost_usd": 0.01, "model": model}}))
print(json.dumps({"where": os.getcwd(), "prompt_dir": os.path.dirname(prompt_file)}))
"""


def test_command_runs_with_filled_template(workspace: Path, tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(SCRIPT)
    command = [sys.executable, str(script), "{prompt_file}", "{workspace}", "{model}"]
    sink = Collect()
    outcome = get_agent("command").run(
        make_request(workspace, model="local-7b", options={"command": command}), sink
    )
    assert outcome.status == "ok" and outcome.exit_code == 0
    assert (outcome.tokens_in, outcome.tokens_out, outcome.cost_usd, outcome.model) == (
        42,
        5,
        0.01,
        "local-7b",
    )
    assert [i.text for i in sink.of("message")] == [f"read {len('Make softmax faster.')} chars"]
    assert [i.text for i in sink.of("file_edit")] == ["kernel.py"]
    assert (workspace / "kernel.py").read_text() == "BLOCK_SIZE = 1024\n"
    where = next(i.data for i in sink.of("log") if "where" in i.data)
    assert Path(where["where"]).resolve() == workspace.resolve()
    assert not Path(where["prompt_dir"]).resolve().is_relative_to(workspace.resolve())
    assert not Path(where["prompt_dir"]).exists()  # the prompt file is removed afterwards


def test_command_can_reuse_a_cli_stream_format(workspace: Path) -> None:
    command = ["cat", str(FAKES / "claude.jsonl")]
    outcome = get_agent("command").run(
        make_request(workspace, options={"command": command, "stream_format": "claude"}), Collect()
    )
    assert (outcome.tokens_in, outcome.cost_usd) == (460, 0.0421)


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({}, "options.command"),
        ({"command": "echo hi"}, "options.command"),
        ({"command": ["echo", "{prompt}"]}, "options.command"),
        ({"command": ["echo"], "stream_format": "xml"}, "options.stream_format"),
    ],
)
def test_bad_command_settings_name_the_field(workspace: Path, extra: dict, field: str) -> None:
    with pytest.raises(InputError) as err:
        get_agent("command").run(make_request(workspace, options=extra), Collect())
    assert err.value.where == field and err.value.fix


def test_version_command_is_recorded(workspace: Path) -> None:
    extra = {
        "command": ["true"],
        "version_command": [sys.executable, "-c", "print('my-agent 3.1')"],
    }
    outcome = get_agent("command").run(make_request(workspace, options=extra), Collect())
    assert outcome.version == "my-agent 3.1"
    assert json.loads(json.dumps(outcome.status)) == "ok"


def test_stdin_is_closed_and_extra_env_reaches_the_process(workspace: Path) -> None:
    script = (
        "import os, sys; data = sys.stdin.read(); print(os.environ['ARM_VAR'] + ':' + repr(data))"
    )
    extra = {"command": [sys.executable, "-c", script], "env": {"ARM_VAR": "from-arm"}}
    sink = Collect()
    outcome = get_agent("command").run(
        make_request(workspace, timeout_seconds=20.0, options=extra), sink
    )
    assert outcome.status == "ok"
    assert sink.of("log")[0].text == "from-arm:''"


class _Picky(Collect):
    """A sink that fails on one item and records the thread of every call."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def emit(self, item: AgentItem) -> None:
        self.threads.add(threading.get_ident())
        if item.text == "boom":
            raise RuntimeError("sink bug")
        super().emit(item)


def test_items_arrive_on_the_callers_thread_and_a_failing_handler_is_counted(
    workspace: Path,
) -> None:
    extra = {"command": [sys.executable, "-c", "print('a'); print('boom'); print('b')"]}
    sink = _Picky()
    outcome = get_agent("command").run(
        make_request(workspace, timeout_seconds=20.0, options=extra), sink
    )
    assert outcome.status == "ok"
    assert sink.threads == {threading.get_ident()}
    assert [i.text for i in sink.of("log")][:2] == ["a", "b"]
    assert sink.ended()["handler_errors"] == 1


def test_the_ledger_location_never_reaches_the_agent(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AKA_LEDGER", "/secret/ledger")
    script = (
        "import os; print(os.environ.get('AKA_LEDGER', '-') + ' ' + os.environ['AKA_EVAL_SOCKET'])"
    )
    sink = Collect()
    request = make_request(
        workspace,
        env={"AKA_EVAL_SOCKET": "/tmp/s.sock"},
        timeout_seconds=20.0,
        options={"command": [sys.executable, "-c", script]},
    )
    assert get_agent("command").run(request, sink).status == "ok"
    assert sink.of("log")[0].text == "- /tmp/s.sock"


def test_the_eval_program_beside_this_interpreter_is_put_on_path(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    beside = Path(sys.executable).parent
    if not (beside / "aka").is_file():
        pytest.skip("aka is not installed beside this interpreter")
    monkeypatch.setenv("PATH", str(tmp_path))
    script = "import shutil; print(shutil.which('aka'))"
    request = dataclasses.replace(
        make_request(
            workspace, timeout_seconds=20.0, options={"command": [sys.executable, "-c", script]}
        ),
        eval_command=("aka", "eval"),
    )
    sink = Collect()
    assert get_agent("command").run(request, sink).status == "ok"
    assert sink.of("log")[0].text == str(beside / "aka")
