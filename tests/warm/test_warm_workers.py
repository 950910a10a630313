"""Warm evaluation workers: same verdicts as fresh interpreters, fresh children, no leftovers.

These run the real evaluator on the CPU with evaluation processes forked from the zygote
(:mod:`aka.eval._zygote`) and compare with fresh interpreters (the default path).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from aka.eval import _warm
from aka.eval._proc import Proc
from aka.eval._switches import Switches
from aka.eval._workers import Workers, configure

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "redteam"))
from redteam_corpus import ALL, FAST_TIMING, evaluate_entry

from aka.eval import EvalRequest, evaluate
from aka.events import REGISTRY, Scored
from aka.tasks import load_task
from aka_ledger import Ledger

ENTRIES = ["honest_triton_basic", "honest_vectorized", "p02_background_process",
           "p14_channel_write", "p04_timer_patch"]  # fmt: skip
LEAKY = """import os
import torch

seen = torch.__dict__.setdefault("_aka_leak", os.getpid())
seen = None if seen == os.getpid() else seen
raise RuntimeError(f"pid={os.getppid()} seen={seen}")  # the reaper: the forked process
"""


@pytest.fixture(autouse=True)
def host_pids() -> bool:
    """These tests tell processes apart by the pid candidate code reports, which a PID
    namespace would make 1 for all (containment is tested in tests/redteam)."""
    return True


@pytest.fixture
def switched() -> Iterator[None]:
    """Each test configures this process's workers; the environment's are restored after."""
    yield
    configure()


def _gone(pid: int) -> bool:
    """No such process, or only a zombie waiting for a reaper."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _wait_gone(pids: list[int], timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if all(_gone(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def _evaluate_text(tasks_root: Path, root: Path, text: str, time_it: bool = True) -> Scored:
    task = load_task(tasks_root / "torch/ops/affine", root=tasks_root)
    ledger = Ledger.open(root, registry=REGISTRY)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / task.spec.entry_file).write_text(text)
        candidate = ledger.cas.snapshot(Path(tmp), paths=[task.spec.entry_file])
    req = EvalRequest(task=task, task_tree=ledger.cas.snapshot(task.path), candidate=candidate,
                      harness="b3:" + "0" * 64, device="cpu", policy="agentkernelarena",
                      timing=FAST_TIMING, time=time_it)  # fmt: skip
    return evaluate(ledger, "warm", None, req)


def _key(s: Scored) -> tuple[bool, bool, list[str]]:
    return bool(s.compiled), bool(s.correct), sorted(s.hack_flags)


def test_warm_verdicts_match_fresh_on_red_team_candidates(tmp_path: Path, switched: None
                                                         ) -> None:  # fmt: skip
    entries = [e for e in ALL if e.name in ENTRIES]
    assert len(entries) == len(ENTRIES)

    def both(on: bool) -> dict[str, tuple[bool, bool, list[str]]]:
        configure(Switches(warm=on, pid_namespace=False))
        with ThreadPoolExecutor(max_workers=1) as pool:  # as the corpus test: one at a time
            done = pool.map(lambda e: (e.name, _key(evaluate_entry(e, tmp_path / f"{on}"))),
                            entries)  # fmt: skip
            return dict(done)

    fresh, warm = both(False), both(True)
    assert warm == fresh
    for e in entries:  # and both are the corpus's verdicts: honest pass, adversarial caught
        assert warm[e.name][1] == e.honest
        assert bool(warm[e.name][2]) != e.honest  # flagged exactly when adversarial
        # Which flags fire is pinned by tests/redteam; after other suites have run, the
        # channel-write candidate is sometimes flagged `file_access` instead (both paths alike).


def test_warm_verdict_matches_fresh_on_fixture_task(tasks_root: Path, tmp_path: Path,
                                                    switched: None) -> None:  # fmt: skip
    text = (tasks_root / "torch/ops/affine/source/kernel.py").read_text()
    configure(Switches(warm=False, pid_namespace=False))
    fresh = _evaluate_text(tasks_root, tmp_path / "fresh", text)
    configure(Switches(warm=True, pid_namespace=False))
    warm = _evaluate_text(tasks_root, tmp_path / "warm", text)
    assert _key(warm) == _key(fresh) == (True, True, [])
    assert warm.speedup is not None


def test_children_are_fresh_and_share_no_state(tasks_root: Path, tmp_path: Path,
                                               warm: Workers) -> None:  # fmt: skip
    zygote = warm.zygote_status("cpu")["pid"]
    errors = [_evaluate_text(tasks_root, tmp_path / str(i), LEAKY, False).error or ""
              for i in range(2)]  # fmt: skip
    pids = [int(e.split("pid=")[1].split()[0]) for e in errors]
    assert all("seen=None" in e for e in errors), errors
    assert len(set(pids)) == 2 and zygote not in pids


def test_zygote_holds_torch_but_never_initializes_cuda(tasks_root: Path, tmp_path: Path,
                                                       warm: Workers) -> None:  # fmt: skip
    text = (tasks_root / "torch/ops/affine/source/kernel.py").read_text()
    _evaluate_text(tasks_root, tmp_path / "l", text, False)
    status = warm.zygote_status("cpu")
    assert {"torch", "aka.eval._candidate", "aka.eval._checker"} <= set(status["modules"])
    assert status["cuda_initialized"] is False
    assert "aka_ledger" not in status["modules"] and "pydantic" not in status["modules"]


def test_killed_evaluation_leaves_no_process(tmp_path: Path, warm: Workers) -> None:
    (tmp_path / "scratch").mkdir()
    proc = Proc("aka.eval._candidate", cwd=tmp_path / "scratch", device="cpu", workers=warm)
    assert isinstance(proc.proc, _warm.WarmProcess)  # waiting for its request on stdin
    assert not _gone(proc.proc.pid)
    proc.kill()  # SIGTERM (its reaper takes its descendants down), then SIGKILL
    assert proc.proc.returncode in (-signal.SIGKILL, -signal.SIGTERM, 128 + signal.SIGTERM)
    assert _wait_gone([proc.proc.pid])


def test_killed_evaluator_takes_zygote_and_children_with_it(tmp_path: Path) -> None:
    script = (
        "import os, sys, time; from pathlib import Path\n"
        "from aka.eval._proc import Proc; from aka.eval._workers import configure\n"
        "w = configure(warm=True)\n"
        f"p = Proc('aka.eval._candidate', cwd=Path({str(tmp_path)!r}), device='cpu', workers=w)\n"
        "print(w.zygote_status('cpu')['pid'], p.proc.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    evaluator = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert evaluator.stdout is not None
    pids = [int(p) for p in evaluator.stdout.readline().split()]
    assert len(pids) == 2 and not any(_gone(p) for p in pids)
    os.kill(evaluator.pid, signal.SIGKILL)
    evaluator.wait()
    assert _wait_gone(pids)
