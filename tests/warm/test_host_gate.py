"""The timing gate across evaluators: members of one folder time one at a time.

Members are real processes here (the gate tells members apart by pid): each joins the
folder for a device and starts a child, as an evaluator starts its candidate and checker
processes. The test watches their scheduler state (``T``: stopped) in ``/proc``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from proc_state import settles, state

from aka.eval._gate import Gate
from aka.eval._hostgate import HostGate, recover

DEVICE = "cuda:0"

# A member: joins the folder, starts a child (its "candidate"), prints both pids, waits.
MEMBER = textwrap.dedent(
    """
    import subprocess, sys, time
    from pathlib import Path
    from aka.eval._hostgate import HostGate
    gate = HostGate(Path(sys.argv[1]))
    gate.join(sys.argv[2])
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    print(child.pid, flush=True)
    time.sleep(120)
    """
)

# A member that times: its Gate closes for a sleeper "candidate", holds it HOLD_S, logs
# when it held the device, then opens; repeated ROUNDS times.
TIMER = textwrap.dedent(
    """
    import json, subprocess, sys, time
    from pathlib import Path
    from aka.eval._gate import Gate
    from aka.eval._hostgate import HostGate
    folder, device, log, rounds, hold = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    gate = Gate(host=HostGate(folder))
    for _ in range(rounds):
        cand = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        gate.activate(device, cand.pid)
        gate.close(device, cand.pid, lambda: None)
        start = time.time()
        time.sleep(hold)
        end = time.time()
        with open(log, "a") as f:
            f.write(json.dumps([start, end]) + "\\n")
        cand.kill(); cand.wait()
        gate.open(device, cand.pid)
    gate.shutdown()
    """
)


def _member(folder: Path, device: str = DEVICE) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", MEMBER, str(folder), device], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def _end(*procs: subprocess.Popen[str]) -> None:
    for p in procs:
        os.kill(p.pid, signal.SIGCONT)
        p.kill()
        p.wait()


def test_acquire_stops_other_members_and_their_children_until_release(tmp_path: Path) -> None:
    member, child = _member(tmp_path)
    other_device, other_child = _member(tmp_path, "cuda:1")
    gate = HostGate(tmp_path)
    try:
        gate.acquire(DEVICE)
        assert settles(member.pid, stopped=True)
        assert settles(child, stopped=True)
        assert settles(other_device.pid, stopped=False)  # another GPU is not touched
        assert settles(other_child, stopped=False)
        gate.release(DEVICE)
        assert settles(member.pid, stopped=False)
        assert settles(child, stopped=False)
    finally:
        gate.leave()
        _end(member, other_device)
    assert not list((tmp_path / "cuda_0").glob(str(os.getpid())))  # left the folder


def test_a_recycled_pid_is_never_signalled(tmp_path: Path) -> None:
    """A member file whose start time no longer matches its pid names another process."""
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    members = tmp_path / "cuda_0"
    members.mkdir()
    (members / str(bystander.pid)).write_text("1")  # a start time this process never had
    gate = HostGate(tmp_path)
    try:
        gate.acquire(DEVICE)
        time.sleep(0.2)
        assert state(bystander.pid) != "T"
        assert not (members / str(bystander.pid)).exists()
    finally:
        gate.release(DEVICE)
        bystander.kill()
        bystander.wait()


def test_what_a_dead_holder_stopped_is_continued(tmp_path: Path) -> None:
    """The lock dies with its holder; the next holder, or recover(), continues the rest."""
    member, child = _member(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from aka.eval._hostgate import HostGate;"
         "HostGate(Path(sys.argv[1])).acquire(sys.argv[2]); print('held', flush=True);"
         "time.sleep(120)", str(tmp_path), DEVICE],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert settles(member.pid, stopped=True) and settles(child, stopped=True)
        holder.kill()
        holder.wait()
        time.sleep(0.2)
        assert state(member.pid) == "T"  # nobody continued it yet
        recover(tmp_path)
        assert settles(member.pid, stopped=False)
        assert settles(child, stopped=False)
    finally:
        _end(member)


def test_gates_of_two_evaluators_time_one_at_a_time(tmp_path: Path) -> None:
    """Two processes, each with its own Gate on the folder: their holds never overlap."""
    logs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    folder = tmp_path / "gate"
    procs = [
        subprocess.Popen([sys.executable, "-c", TIMER, str(folder), DEVICE, str(log), "3", "0.3"])
        for log in logs
    ]
    for p in procs:
        assert p.wait(timeout=60) == 0
    holds = sorted(json.loads(line) for log in logs for line in log.read_text().splitlines())
    assert len(holds) == 6
    for (_, end), (start, _) in itertools.pairwise(holds):
        assert start >= end - 1e-3, holds
    assert not list((folder / "cuda_0").iterdir())  # both left


def test_a_gate_switched_off_never_takes_the_host_lock(tmp_path: Path) -> None:
    gate = Gate(stop=False, host=HostGate(tmp_path))
    granted: list[int] = []
    gate.close(DEVICE, 12345, lambda: granted.append(1))
    assert granted == [1]
    assert not list(tmp_path.glob("*.lock"))


@pytest.mark.parametrize("raw", ["", "relative/dir"])
def test_switches_read_the_folder_from_the_environment(raw: str, tmp_path: Path) -> None:
    from aka.eval._switches import HOST_GATE_ENV, Switches

    env = {HOST_GATE_ENV: raw} if raw else {}
    got = Switches.from_env(env).host_gate
    assert got == (Path(raw).resolve() if raw else None)


def test_hold_times_in_this_process_with_the_device_to_itself() -> None:
    """``Gate.hold``: what this process times itself (a command task's performance runs)
    waits for a timing candidate to finish and stops the device's other processes."""
    import threading

    gate = Gate()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    timer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    order: list[str] = []
    seen: list[bool] = []
    try:
        gate.register(DEVICE, sleeper.pid)
        gate.activate(DEVICE, timer.pid)
        gate.close(DEVICE, timer.pid, lambda: order.append("candidate"))

        def held() -> None:
            with gate.hold(DEVICE):
                order.append("held")
                seen.append(settles(sleeper.pid, stopped=True))

        t = threading.Thread(target=held)
        t.start()
        time.sleep(0.3)
        assert order == ["candidate"]  # the candidate times first; the hold waits
        gate.open(DEVICE, timer.pid)
        t.join(timeout=5)
        assert order == ["candidate", "held"] and seen == [True]
        assert settles(sleeper.pid, stopped=False)
    finally:
        _end(sleeper, timer)


def test_a_command_task_times_with_the_device_to_itself(tmp_path: Path) -> None:
    """The performance command runs while the evaluator's other processes are stopped."""
    from aka.eval import current_workers
    from aka.kind_specs import CommandSpec
    from aka.kinds._command import run_commands

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    perf = (
        f"python -c \"import json, pathlib; s = open('/proc/{sleeper.pid}/stat').read()"
        ".rsplit(')', 1)[1].split()[0]; pathlib.Path('state').write_text(s); "
        "pathlib.Path('build').mkdir(exist_ok=True); pathlib.Path('build/performance_report.json')"
        ".write_text(json.dumps([{'test_case_id': 'a', 'execution_time_ms': 1.0}]))\""
    )
    spec = CommandSpec(compile="true", correctness="true", performance=perf)
    base, cand = tmp_path / "base", tmp_path / "cand"
    base.mkdir()
    cand.mkdir()
    gate = current_workers().gate
    gate.register("cpu", sleeper.pid)
    try:
        out = run_commands(spec, base=base, cand=cand, device="cpu", time=True, rounds=1)
        assert out["error"] is None and out["timing"], out
        assert (base / "state").read_text() == "T" and (cand / "state").read_text() == "T"
        assert settles(sleeper.pid, stopped=False)
    finally:
        gate.release("cpu", sleeper.pid)
        _end(sleeper)


# An evaluator running a command-driven task: its correctness command writes its pid
# and sleeps; it never times, so it joins the folder only as its commands run.
COMMANDS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from aka.kind_specs import CommandSpec
    from aka.kinds._command import run_commands
    cand = Path(sys.argv[1])
    spec = CommandSpec(compile="true", correctness="echo $$ > cmd.pid; exec sleep 60",
                       performance="true")
    run_commands(spec, base=cand, cand=cand, device="cpu", time=False)
    """
)


def test_a_task_s_own_commands_are_stopped_while_another_member_times(tmp_path: Path) -> None:
    """Command tasks run on the device in the evaluator's own children, before (or
    without) any timing of their own: they must not load it under another's timing."""
    from aka.eval import HOST_GATE_ENV

    folder, cand = tmp_path / "gate", tmp_path / "cand"
    cand.mkdir()
    env = {**os.environ, HOST_GATE_ENV: str(folder)}
    evaluator = subprocess.Popen([sys.executable, "-c", COMMANDS, str(cand)], env=env)
    pidfile = cand / "cmd.pid"
    end = time.monotonic() + 30
    while time.monotonic() < end and not (pidfile.exists() and pidfile.read_text().strip()):
        time.sleep(0.05)
    command = int(pidfile.read_text())
    gate = HostGate(folder)
    try:
        gate.acquire("cpu")
        assert settles(evaluator.pid, stopped=True)
        assert settles(command, stopped=True)
        gate.release("cpu")
        assert settles(command, stopped=False)
    finally:
        gate.leave()
        with contextlib.suppress(ProcessLookupError):
            os.kill(command, signal.SIGKILL)
        _end(evaluator)
