"""No evaluation process's memory is writable from another process of the same user.

Every evaluation process runs as the same user, and a candidate's process drops its
capabilities; CUDA evaluations have no PID namespace, so the other processes are
visible. Without more, a candidate could write another's memory through
``/proc/PID/mem``: a concurrent evaluation's sealed core, a clean baseline timing, a
prepared checker. The test plays that candidate: a process with no capabilities opening
the memory of a process started as the evaluator starts them, and of a plain one.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aka.eval import _contain
from aka.eval._proc import BOOTSTRAP
from aka.eval._workers import Workers

SLEEPER = "import sys, time\nsys.stdout.write('up\\n'); sys.stdout.flush(); time.sleep(60)\n"


def _writable_from_a_stripped_process(pid: int) -> bool:
    """Whether a forked process without capabilities can open ``pid``'s memory to write."""
    child = os.fork()
    if child == 0:
        _contain._drop_capabilities()
        try:
            with open(f"/proc/{pid}/mem", "rb+"):
                os._exit(0)
        except OSError:
            os._exit(1)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _victim(argv: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    strip = "from aka.eval import _contain; _contain._drop_capabilities()\n"
    (cwd / "victim_mod.py").write_text(strip + SLEEPER)
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
    return proc


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl and /proc are Linux's")
def test_a_process_started_as_evaluations_are_keeps_its_memory_to_itself(tmp_path: Path) -> None:
    plain = _victim([sys.executable, "victim_mod.py"], tmp_path)
    started = _victim(
        [sys.executable, "-I", "-c", BOOTSTRAP, str(tmp_path), "victim_mod"], tmp_path
    )
    try:
        if not _writable_from_a_stripped_process(plain.pid):
            pytest.skip("this kernel already refuses (Yama ptrace_scope); nothing to show")
        assert not _writable_from_a_stripped_process(started.pid)
    finally:
        for proc in (plain, started):
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_the_evaluating_process_is_not_dumpable_once_it_has_workers() -> None:
    Workers()
    assert ctypes.CDLL(None).prctl(_contain.PR_GET_DUMPABLE, 0, 0, 0, 0) == 0
