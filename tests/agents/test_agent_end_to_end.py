"""A scripted agent through ``aka run`` on the CPU: edits, self-evaluates, reports usage."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from aka.cli import main

TASKS = Path(__file__).resolve().parents[2] / "tasks"
AGENT = """
import json, re, subprocess, sys
prompt_file, ws = sys.argv[1], sys.argv[2]
assert "aka eval" in open(prompt_file).read()
path = ws + "/kernel.py"
open(path, "w").write(re.sub(r"BLOCK_SIZE = \\d+", "BLOCK_SIZE = 256", open(path).read()))
r = subprocess.run(["aka", "eval", "--format", "json"], capture_output=True, text=True, cwd=ws)
print(json.dumps({"kind": "tool_result", "text": r.stdout, "data": {"exit": r.returncode}}))
print(json.dumps({"kind": "usage", "data": {"tokens_in": 10, "tokens_out": 2, "cost_usd": 0.001, "model": "scripted"}}))
"""


def test_command_agent_runs_under_the_orchestrator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    config = {
        "label": "agents-e2e",
        "tasks_root": str(TASKS),
        "tasks": ["triton2triton/llm/softmax"],
        "arms": [
            {
                "name": "scripted",
                "agent": "command",
                "timeout_seconds": 300,
                "options": {
                    "command": [sys.executable, str(script), "{prompt_file}", "{workspace}"]
                },
            }
        ],
        "device": "cpu",
        "repeats": 1,
        "timing": {"max_time_s": 0.2, "min_samples": 3},
    }
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(config))
    ledger = str(tmp_path / ".aka")
    with pytest.raises(SystemExit) as done:
        main(["run", str(cfg), "--ledger", ledger])
    assert done.value.code in (0, None)
    capsys.readouterr()
    query = "select payload->>'$.status', payload->>'$.model', payload->>'$.tokens_in' from events where type='AgentFinished'"
    with pytest.raises(SystemExit):
        main(["sql", query, "--ledger", ledger, "--format", "json"])
    (row,) = json.loads(capsys.readouterr().out)
    assert list(row.values()) == ["ok", "scripted", "10"]
    with pytest.raises(SystemExit):
        main(
            [
                "sql",
                "select count(*) AS n from events where type='Scored' "
                "and payload->>'$.purpose' in ('final', 'self')",
                "--ledger",
                ledger,
                "--format",
                "json",
            ]
        )
    assert json.loads(capsys.readouterr().out) == [
        {"n": 2}
    ]  # the self-evaluation and the final score
