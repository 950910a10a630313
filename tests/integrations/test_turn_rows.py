"""Multi-turn reward rows carry each turn's action (diff and message) and its feedback.

Before, a self-evaluation turn's row had an empty ``response`` (its diff was never looked
up) and no trace of what the model said or what ``aka eval`` told it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from aka.events import AgentItemRecord
from aka.turns import split_messages

AGENT = """
import json, subprocess, sys
ws = sys.argv[1]
def say(kind, text, **data):
    print(json.dumps({"kind": kind, "text": text, "data": data}), flush=True)
def write(body):
    open(ws + "/kernel.py", "w").write("import torch\\n\\n\\ndef affine(x):\\n    return " + body + "\\n")
def evaluate():
    say("tool_call", "Bash", command="aka eval")
    r = subprocess.run(["aka", "eval", "--format", "json"], capture_output=True, text=True, cwd=ws)
    say("tool_result", r.stdout)
say("message", "Scaling by three should do.")
write("x * 3")
evaluate()
say("thinking", "the reference adds one")
say("message", "Wrong: it is 2x + 1. Fusing it with addcmul.")
write("torch.addcmul(torch.ones_like(x), x, torch.full_like(x, 2.0))")
evaluate()
say("message", "Correct now; keeping it.")
"""


def test_self_evaluation_turns_export_diff_message_and_feedback(
    tmp_path: Path, tasks_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from aka.cli import main

    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    config = {
        "label": "turns",
        "tasks_root": str(tasks_root),
        "tasks": ["torch/ops/affine"],
        "arms": [
            {
                "name": "scripted",
                "agent": "command",
                "timeout_seconds": 300,
                "options": {"command": [sys.executable, str(script), "{workspace}"]},
            }
        ],
        "device": "cpu",
        "repeats": 1,
        "timing": {"max_time_s": 0.2, "min_samples": 3},
    }
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(config))
    ledger, out = str(tmp_path / ".aka"), tmp_path / "rewards.parquet"
    with pytest.raises(SystemExit) as done:
        main(["run", str(cfg), "--ledger", ledger, "--run-id", "turns-1"])
    assert done.value.code in (0, None)
    with pytest.raises(SystemExit) as done:
        main(
            [
                "export",
                "rewards",
                "turns-1",
                "--out",
                str(out),
                "--format",
                "skyrl",
                "--ledger",
                ledger,
            ]
        )
    assert done.value.code in (0, None)
    capsys.readouterr()
    rows = pl.read_parquet(out).sort("step").to_dicts()
    assert [r["turn"] for r in rows] == [1, 2, 0]
    first, second, final = rows
    assert first["response"].startswith("--- a/kernel.py\n+++ b/kernel.py\n@@")
    assert (
        "-    return x * 2 + 1\n" in first["response"]
        and "+    return x * 3\n" in first["response"]
    )
    assert (
        "+    return torch.addcmul(" in second["response"]
        and second["response"] == final["response"]
    )
    assert first["message"] == "Scaling by three should do."
    assert second["message"] == "Wrong: it is 2x + 1. Fusing it with addcmul."
    assert final["message"] == "Correct now; keeping it."
    assert (
        "correct: no" in first["feedback"]
        and "first failing case: N=4096 float32" in first["feedback"]
    )
    assert "correct: yes" in second["feedback"] and "- N=4096 float32: " in second["feedback"]
    assert "correct: yes" in final["feedback"] and f"score: {final['score']:g}" in final["feedback"]
    assert first["score"] == 20.0 and final["score"] > 120
    assert json.loads(first["reward_spec"]["ground_truth"])["correct"] is False


def item(kind: str, text: str = "", **data: object) -> AgentItemRecord:
    return AgentItemRecord(kind=kind, text=text, data=json.dumps(data))


def test_messages_split_at_each_aka_eval_call() -> None:
    items = [
        item("message", "plan"),
        item("tool_call", "Bash", command="aka eval --format json"),
        item("tool_result", "compiled: no"),
        item("message", "  "),
        item("message", "fix"),
        item("message", "and tune"),
        item("tool_call", "aka eval (BLOCK=128)"),  # the autotune agent's form
        item("tool_call", "Bash", command="ls"),
        item("message", "done"),
    ]
    assert split_messages(items) == {1: "plan", 2: "fix\n\nand tune", 0: "done"}
    assert split_messages([item("message", "only")]) == {0: "only"}
    assert split_messages([item("tool_call", "Bash", command="aka eval")]) == {}
