"""A command-driven task times with the device to itself, asked for by aka's helper.

The performance command gets two pipes (``AKA_TIMING_GATE``): it asks for the device
before its timed loops and gives it back after, so its start, imports and compiles run
beside other work. A command that never asks is timed again, whole, under the gate. The
tests watch a process registered with the evaluator's gate, as another evaluation's
process would be, through its scheduler state in ``/proc``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from aka.eval import current_workers
from aka.kind_specs import CommandSpec
from aka.kinds._command import run_commands

# The helper's protocol, by hand: the state of the watched process (WATCHED) before
# asking, while holding the device and after giving it back, one line per run.
ASKING = """import json, os, pathlib, sys, time
def state():
    time.sleep(0.3)
    return open("/proc/%d/stat" % WATCHED).read().rsplit(")", 1)[1].split()[0]
ask, answer = (int(fd) for fd in os.environ["AKA_TIMING_GATE"].split(","))
before = state()
os.write(ask, b"g"); assert os.read(answer, 1) == b"g"
held = state()
os.write(ask, b"d")
after = state()
with open("runs.log", "a") as f:
    f.write(before + held + after + "\\n")
pathlib.Path("build").mkdir(exist_ok=True)
json.dump([{"test_case_id": "a", "execution_time_ms": 1.0}], open("build/performance_report.json", "w"))
"""

SILENT = """import json, pathlib
state = open("/proc/%d/stat" % WATCHED).read().rsplit(")", 1)[1].split()[0]
with open("runs.log", "a") as f:
    f.write(state + "\\n")
pathlib.Path("build").mkdir(exist_ok=True)
json.dump([{"test_case_id": "a", "execution_time_ms": 1.0}], open("build/performance_report.json", "w"))
"""


@pytest.fixture
def watched():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    gate = current_workers().gate
    gate.register("cpu", proc.pid)
    yield proc.pid
    gate.release("cpu", proc.pid)
    proc.kill()
    proc.wait()


def _folders(tmp: Path, script: str, pid: int) -> tuple[Path, Path, CommandSpec]:
    base, cand = tmp / "base", tmp / "cand"
    for folder in (base, cand):
        folder.mkdir()
        (folder / "perf.py").write_text(f"WATCHED = {pid}\n" + script)
    perf = f"{sys.executable} perf.py"
    spec = CommandSpec(compile="true", correctness="true", performance=perf, timing_gate="helper")
    return base, cand, spec


def test_only_the_asked_for_part_has_the_device_to_itself(tmp_path: Path, watched: int) -> None:
    base, cand, spec = _folders(tmp_path, ASKING, watched)
    out = run_commands(spec, base=base, cand=cand, device="cpu", time=True, rounds=1)
    assert out["error"] is None and out["timing"], out
    for folder in (base, cand):
        (line,) = (folder / "runs.log").read_text().split()
        assert line[1] == "T"  # stopped while the command held the device
        assert line[0] != "T" and line[2] != "T", line  # running before and after


def test_a_command_that_never_asks_is_timed_again_whole(tmp_path: Path, watched: int) -> None:
    base, cand, spec = _folders(tmp_path, SILENT, watched)
    out = run_commands(spec, base=base, cand=cand, device="cpu", time=True, rounds=1)
    assert out["error"] is None and out["timing"], out
    for folder in (base, cand):
        first, again = (folder / "runs.log").read_text().split()
        assert first != "T" and again == "T"  # the second run held the device whole


def test_a_command_that_exits_holding_the_device_gives_it_back(
    tmp_path: Path, watched: int
) -> None:
    dies = ASKING.replace('os.write(ask, b"d")', "os._exit(0)")
    base, cand, spec = _folders(tmp_path, dies, watched)
    run_commands(spec, base=base, cand=cand, device="cpu", time=True, rounds=1)
    stat = Path(f"/proc/{watched}/stat")
    end = time.monotonic() + 5
    while time.monotonic() < end and stat.read_text().rsplit(")", 1)[1].split()[0] == "T":
        time.sleep(0.05)
    assert stat.read_text().rsplit(")", 1)[1].split()[0] != "T"
    assert not current_workers().gate.closed("cpu")
