"""Processes beside the evaluation, counted by the sealed core after every candidate call,
and threads, which a contained CPU evaluation of a Triton task cannot start once the
candidate is imported.

A red-team helper ran beside a whole plan unseen: started with
``_posixsubprocess.fork_exec`` (no audit event) and ``SIGCHLD`` ignored, so the kernel
reaped it at exit and the harness's Python, which counts its children at three stages,
never found one. On the CPU the evaluation process is PID 1 of a namespace of its own
with its own ``/proc``, where the core lists every process after each call."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from redteam_corpus import TRITON, scale_job

from aka.eval._pipeline import run_job

# The first call starts a process that outlives it (its exit reaped by the kernel); the
# answer is right either way.
HELPER = """
import os
import signal
import time

_started = []


def scale(x):
    if {start} and not _started:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        pid = os.fork()
        if pid == 0:
            time.sleep(3)
            os._exit(0)
        _started.append(pid)
    return x * 2 + 1
"""


def _core_evidence(tmp_path: Path, start: bool) -> list[str]:
    job, root = scale_job(tmp_path, HELPER.format(start=start))
    v = run_job(job, root)
    assert v.cases and all(c["ok"] for c in v.cases), (v.error, v.cases[:1])
    return [e for e in v.evidence if e.startswith("background_process") and "(the core)" in e]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PID namespaces are Linux's")
def test_a_process_started_in_a_call_is_seen_by_the_core(tmp_path: Path) -> None:
    found = _core_evidence(tmp_path, start=True)
    assert len(found) == 1 and "beside the evaluation after a candidate call" in found[0], found


def test_the_drawer_is_not_counted(tmp_path: Path) -> None:
    """The control: the same candidate starting nothing; the input drawer (a process of the
    harness's, alive through the plan) is not a finding."""
    assert _core_evidence(tmp_path, start=False) == []


# A thread started in a call (by ``_thread``, no ``threading``): every thread has a
# ``/proc/TID/mem`` of its own, reading and writing the process's memory past its page
# protections, and one opened while the thread lives stays open after it ends.
THREAD = """
import _thread

_tried = []


def scale(x):
    if not _tried:
        try:
            _thread.start_new_thread(lambda: None, ())
            _tried.append("started")
        except RuntimeError:
            _tried.append("refused")
    return x * 2 + 1 if _tried == ["refused"] else x * 0
"""


@pytest.mark.parametrize("contain", [True, False], ids=["contained", "control"])
def test_no_thread_starts_in_a_contained_cpu_evaluation(tmp_path: Path, contain: bool) -> None:
    """On a Triton task, contained, the thread is refused (every case right); the control,
    not contained, shows it would start (every case wrong). (Where candidates may build
    native code, torch.compile's threads are let be: a tripwire, ``threads``.)"""
    job, root = scale_job(tmp_path, THREAD, fixture=TRITON)
    v = run_job(dataclasses.replace(job, contain=contain), root)
    assert v.compiled["ok"] and v.cases, (v.error, v.compiled)
    assert all(c["ok"] == contain for c in v.cases), (v.error, v.cases[:1])
