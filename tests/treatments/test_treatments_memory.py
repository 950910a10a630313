"""Memory: a note written on task 1 is read on task 2, across a kill and `aka resume`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import memory_double  # noqa: F401  (registers the test-double agent in this process)
from treat_helpers import open_ledger, write_run

from aka import events as ev
from aka.config import MemoryConfig
from aka.report import connect
from aka.treatments import ResolvedArm, memory_before

HERE = Path(__file__).resolve().parent


def _two_tasks(tasks_root: Path) -> None:
    src = tasks_root / "torch" / "ops" / "affine"
    for name in ("first", "second"):
        dest = tasks_root / "mem" / name
        shutil.copytree(src, dest)
        spec = dest / "task.yaml"
        spec.write_text(spec.read_text().replace("name: affine", f"name: {name}"))


def _note(led, tree: str) -> str:
    entries = {e.path: e for e in led.cas.read_tree(tree)}
    return led.cas.get(entries["note.txt"].digest).decode() if "note.txt" in entries else ""


def test_memory_survives_a_kill_between_tasks(cli, tmp_path: Path, tasks_root: Path) -> None:
    _two_tasks(tasks_root)
    arm = {"name": "mem", "agent": "memory_double", "memory": {"key": "notes"}}
    cfg = write_run(tmp_path, tasks_root, [arm], tasks=["mem"])
    ledger = tmp_path / "ledger"
    kill = tmp_path / "kill-once"
    kill.write_text("")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "MEMORY_DOUBLE_KILL": str(kill),
    }
    env.pop("AKA_LEDGER", None)
    code = "import memory_double; from aka.cli import main; main()"
    args = ["run", str(cfg), "--ledger", str(ledger), "--run-id", "mem"]
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True)
    assert proc.returncode == 9, proc.stderr.decode()[-2000:]
    assert not kill.exists()

    res = cli("resume", "mem", "--ledger", str(ledger))
    assert res.code == 0, res.err

    first, second = "mem/first#mem#0", "mem/second#mem#0"
    led = open_ledger(ledger)
    try:
        snaps = [
            (e.attempt_key, e.payload)
            for e in led.events(run_id="mem", types=["MemorySnapshotted"])
        ]
        order = [(k, p.try_no, p.phase) for k, p in snaps]
        assert order == [
            (first, 1, "before"),
            (first, 1, "after"),
            (second, 1, "before"),  # killed during this try: no 'after'
            (second, 2, "before"),
            (second, 2, "after"),
        ]
        trees = {(k, p.try_no, p.phase): p for k, p in snaps}
        assert _note(led, trees[(first, 1, "before")].tree) == ""
        assert _note(led, trees[(first, 1, "after")].tree) == "first\n"
        resumed = trees[(second, 2, "before")]
        assert resumed.tree == trees[(first, 1, "after")].tree
        assert (resumed.source_run, resumed.source_attempt) == ("mem", first)
        assert _note(led, trees[(second, 2, "after")].tree) == "first\nsecond\n"
        said = [
            i.text
            for e in led.events(run_id="mem", types=["AgentOutput"])
            if e.attempt_key == second and isinstance(e.payload, ev.AgentOutput)
            for i in e.payload.items
        ]
        # the killed try's output was still buffered when the process died: only the resumed
        # try speaks, and it read task 1's note
        assert said == ["seen: 'first\\n'"]
        scored = {
            e.attempt_key
            for e in led.events(run_id="mem", types=["Scored"])
            if isinstance(e.payload, ev.Scored) and e.payload.purpose == "final"
        }
        assert scored == {first, second}
        prompts = {
            led.cas.get(e.payload.prompt).decode()
            for e in led.events(run_id="mem", types=["AgentStarted"])
            if isinstance(e.payload, ev.AgentStarted)
        }
        assert all("## Memory" in t and "`.memory/`" in t for t in prompts)
        # auditable per attempt through the `memory` view
        rows = (
            connect(led)
            .execute(
                "SELECT attempt_key, try_no, phase, tree FROM memory WHERE run_id = 'mem' ORDER BY time"
            )
            .fetchall()
        )
        assert [(r[0], r[1], r[2]) for r in rows] == order
        assert all(led.cas.exists(r[3]) for r in rows)

        # A later run with the same key starts empty, unless it asks for memory across runs.
        ws = tmp_path / "ws"
        for across, expect in ((False, ""), (True, "first\nsecond\n")):
            shutil.rmtree(ws, ignore_errors=True)
            ws.mkdir()
            memory = MemoryConfig(key="notes", across_runs=across)
            arm_ = ResolvedArm(agent="memory_double", memory=memory)
            before = memory_before(led, "another-run", arm_, ws, try_no=1)
            assert before is not None
            assert (ws / ".memory" / "note.txt").exists() == bool(expect)
            assert _note(led, before.tree) == expect
    finally:
        led.close()
