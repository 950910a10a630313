"""``aka export prompts``: prompt rows per trainer layout, each naming its task and digest."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from aka.events import REGISTRY
from aka.integrations import parse_response
from aka.integrations._dataset import prompt_frame, trainer_prompt
from aka.tasks import select
from aka_ledger import Ledger

REPO = Path(__file__).resolve().parents[2]

HEADS = {
    "verl": ["data_source", "prompt", "ability", "reward_model", "extra_info"],
    "skyrl": ["data_source", "prompt", "env_class", "reward_spec", "extra_info"],
    "trl": ["prompt", "task", "task_digest", "data_source", "extra_info"],
}


@pytest.mark.parametrize("fmt", ["verl", "skyrl", "trl"])
def test_cli_writes_each_trainers_columns(cli, tmp_path: Path, fmt: str) -> None:
    out, led_dir = tmp_path / "p.parquet", tmp_path / "led"
    res = cli(
        "export", "prompts", "--root", str(REPO / "tasks"), "--tasks", "triton2triton/llm/softmax",
        "--tasks", "torch2triton/ops/cumsum", "--format", fmt, "--device", "cpu", "--repeat", "2",
        "--max-turns", "4", "--out", str(out), "--ledger", str(led_dir),
    )  # fmt: skip
    assert res.code == 0, res.err
    frame = pl.read_parquet(out)
    assert frame.columns == HEADS[fmt] and frame.height == 4
    info = frame["extra_info"].to_list()
    assert [i["index"] for i in info] == [0, 1, 2, 3] and {i["max_turns"] for i in info} == {4}
    assert [i["task"] for i in info] == ["torch2triton/ops/cumsum"] * 2 + [
        "triton2triton/llm/softmax"
    ] * 2
    led = Ledger.open(led_dir, registry=REGISTRY)
    try:  # every digest resolves in the ledger: the task folder the prompt was made from
        paths = {e.path for e in led.cas.read_tree(info[2]["task_digest"])}
    finally:
        led.close()
    assert {"task.yaml", "reference.py", "source/kernel.py"} <= paths
    if fmt != "trl":
        spec = frame[HEADS[fmt][3]].to_list()[0]
        assert json.loads(spec["ground_truth"]) == {
            "task": info[0]["task"],
            "task_digest": info[0]["task_digest"],
        }


def test_the_prompt_shows_the_sources_and_how_to_answer() -> None:
    (task,) = select(REPO / "tasks", ["triton2triton/llm/softmax"])
    text = trainer_prompt(task, device="cpu")
    assert text == trainer_prompt(task, device="cpu")  # deterministic
    source = (task.path / "source" / "kernel.py").read_text()
    assert "## Starting sources" in text and source.strip() in text and "## How to answer" in text
    assert "aka eval" not in text and "workspace" not in text.split("## How to answer")[1]
    assert "M=4, N=96" in text  # the CPU shapes
    # A policy that echoes the starting source the way the prompt shows it gives that source.
    block = text.split("## Starting sources\n\n")[1].split("\n\n## How to answer")[0]
    assert parse_response(block, editable=["kernel.py"], sources={"kernel.py": source}).files == {
        "kernel.py": source
    }


def test_tasks_that_cannot_run_on_the_device_are_skipped_by_name(cli, tmp_path: Path) -> None:
    out = tmp_path / "p.parquet"
    res = cli(
        "export", "prompts", "--root", str(REPO / "tasks"), "--tasks", "cuda2cuda/ops/softmax",
        "--tasks", "triton2triton/llm/softmax", "--device", "cpu", "--out", str(out),
        "--ledger", str(tmp_path / "l"),
    )  # fmt: skip
    assert (
        res.code == 0
        and "skipped cuda2cuda/ops/softmax: no editable sources runnable on cpu" in res.err
    )
    assert pl.read_parquet(out)["extra_info"].to_list()[0]["task"] == "triton2triton/llm/softmax"
    res = cli(
        "export", "prompts", "--root", str(REPO / "tasks"), "--tasks", "cuda2cuda/ops/softmax",
        "--device", "cpu", "--out", str(out), "--ledger", str(tmp_path / "l"),
    )  # fmt: skip
    assert res.code == 2 and "none of the 1 selected tasks" in res.err


def test_importing_the_adapters_loads_neither_torch_nor_triton() -> None:
    import subprocess
    import sys

    code = (
        "import sys, aka.integrations, aka.integrations.verl, aka.integrations.trl, "
        "aka.integrations.skyrl, aka.integrations._dataset\n"
        "print(sorted(m for m in ('torch', 'triton', 'trl', 'transformers') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_bad_selections_and_formats_are_errors(cli, tmp_path: Path) -> None:
    out = str(tmp_path / "p.parquet")
    res = cli(
        "export", "prompts", "--root", str(REPO / "tasks"), "--format", "openrlhf", "--out", out
    )
    assert res.code == 2 and "unknown prompt format 'openrlhf'" in res.err
    res = cli(
        "export",
        "prompts",
        "--root",
        str(REPO / "tasks"),
        "--tasks",
        "nope/none",
        "--out",
        out,
        "--ledger",
        str(tmp_path / "l"),
    )
    assert res.code == 2 and "matches no task" in res.err
    with pytest.raises(Exception, match="repeat must be at least 1"):
        prompt_frame([], {}, repeat=0)


def test_a_task_that_judges_itself_is_no_prompt(cli, tmp_path: Path) -> None:
    """A command-driven task's scripts run the candidate where they decide: no rewards
    for training come from it, so no prompt either, and the skip says why."""
    root = tmp_path / "tasks"
    folder = root / "arena" / "scale"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "scale.py").write_text("def scale(x):\n    return x * 2\n")
    (folder / "check.py").write_text("from scale import scale\nassert scale(1) == 2\n")
    spec = {
        "name": "scale", "type": "command", "instructions": "Make scale faster.",
        "reference": "check.py", "reference_visible": False,
        "backend": "triton", "source_dir": "src", "editable": ["scale.py"],
        "entry": "scale.py:scale", "devices": ["cpu", "cuda"],
        "shapes": {"tuning": [{"case": 0}], "cpu": [{"case": 0}]},
        "commands": {"compile": "true", "correctness": "true", "performance": "true"},
    }  # fmt: skip
    (folder / "task.yaml").write_text(yaml.safe_dump(spec))
    args = ("export", "prompts", "--root", str(root), "--device", "cpu",
            "--out", str(tmp_path / "p.parquet"), "--ledger", str(tmp_path / "l"))  # fmt: skip
    res = cli(*args)
    assert res.code == 2, res.out + res.err
    assert "arena/scale: judged by its own commands (command kind)" in res.err
    assert "can fool" in res.err
