"""Checker processes serve one evaluation after another (aka.eval._reuse).

A checker runs no candidate code, so the evaluator hands the one that checked an
evaluation to the next instead of starting a process per evaluation. What must hold:
each evaluation is judged by its own task's reference (modules a reference imported from
its folder are imported again for the next task, library switches it set are undone),
every report is read under that request's key, and a checker whose report did not come
whole is never handed out again.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

from aka.eval import _reuse
from aka.eval._checker import fresh_state
from aka.eval._pipeline import run_job
from aka.eval._requests import checker_request
from aka.eval._reuse import CHECKER, ServingChecker
from aka.eval._workers import Workers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "redteam"))
from redteam_corpus import scale_job

# A reference whose formula lives in a module of its task's folder: two tasks with a
# ``coeffs.py`` each, checked by one process, must each be judged by their own.
REFERENCE = '''"""y = A x + B, with A and B from this task's own coeffs.py."""

import torch
from coeffs import A, B


def make_inputs(shape, dtype, device, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape["N"], generator=g) * 3 + 1
    return (x.to(dtype=dtype, device=device),)


def reference(x):
    return x.double() * A + B
'''


def _evaluate(tmp: Path, workers: Workers, a: int, b: int, candidate: str | None = None):  # type: ignore[no-untyped-def]
    job, root = scale_job(tmp, candidate or f"def scale(x):\n    return x * {a} + {b}\n",
                          seeds=1, seed=3, time=False)  # fmt: skip
    (root / "task" / "coeffs.py").write_text(f"A, B = {a}, {b}\n")
    (root / "task" / "reference.py").write_text(REFERENCE)
    return run_job(dataclasses.replace(job, reference="reference.py"), root, workers=workers)


def _reaped(pid: int) -> None:
    """Wait until the zygote has reaped ``pid`` and told the evaluator (a spare's death is
    seen when its exit is reported: one killed a moment before its use is a crash)."""
    end = time.monotonic() + 20
    while Path(f"/proc/{pid}").exists() and time.monotonic() < end:
        time.sleep(0.05)
    time.sleep(0.5)


def _checker(workers: Workers) -> ServingChecker:
    proc = workers.spares.take(CHECKER, "cpu", False)
    assert isinstance(proc, ServingChecker)
    return proc


def test_one_checker_judges_each_task_by_its_own_modules(tmp_path: Path, warm: Workers) -> None:
    one = _evaluate(tmp_path / "one", warm, 2, 1)  # no spare yet: checked by a process of its own
    assert one.correct, one.error
    [pid] = warm.spares.waiting()[CHECKER]  # started for the next evaluation
    two = _evaluate(tmp_path / "two", warm, 3, 0)  # coeffs.py of another folder, same name
    assert two.correct, two.error
    wrong = _evaluate(tmp_path / "wrong", warm, 5, 0, "def scale(x):\n    return x * 3\n")
    assert not wrong.correct and "max abs error" in (wrong.error or "")
    assert warm.spares.waiting()[CHECKER] == [pid]  # no checker started since the first
    checker = _checker(warm)
    assert checker.served == 2 and checker.proc.pid == pid
    checker.kill()


def test_a_checker_handed_to_the_next_evaluation_is_not_given_back_by_the_last(
    tmp_path: Path, warm: Workers
) -> None:
    """An evaluation gives its checker back when it reports, and again when it ends; in
    between another evaluation may have taken it. Given back a second time, it waited
    among the spares while serving, and two evaluations read one checker's reports under
    each other's keys (an honest candidate flagged ``result_channel_tamper`` at offset 0).
    The second give-back of an evaluation whose lease has passed is ignored."""
    assert _evaluate(tmp_path / "one", warm, 2, 1).correct
    [pid] = warm.spares.waiting()[CHECKER]
    first = warm.start(CHECKER, cwd=tmp_path, device="cpu", isolate=False)
    lease = first.lease
    assert isinstance(first, ServingChecker) and first.proc.pid == pid
    first.released = True
    warm.keep(first)  # it reported: back among the spares
    second = warm.start(CHECKER, cwd=tmp_path, device="cpu", isolate=False)
    assert second is first and second.lease != lease  # the next evaluation's now
    warm.done_with(first, lease)  # the first evaluation ends
    assert CHECKER not in warm.spares.waiting(), warm.spares.waiting()
    warm.done_with(second, second.lease)  # the second ends without asking it: kept once
    assert warm.spares.waiting()[CHECKER] == [pid]


def test_a_checker_that_died_is_not_handed_out_again(tmp_path: Path, warm: Workers) -> None:
    assert _evaluate(tmp_path / "one", warm, 2, 1).correct
    [pid] = warm.spares.waiting()[CHECKER]
    os.kill(pid, signal.SIGKILL)
    _reaped(pid)
    again = _evaluate(tmp_path / "two", warm, 2, 1)
    assert again.correct, again.error
    checker = _checker(warm)
    assert checker.proc.pid != pid and checker.served == 0  # a fresh spare, for the next
    checker.kill()


def test_a_checker_without_its_report_is_stopped(tmp_path: Path, warm: Workers) -> None:
    """A report that never came (a reference that hangs: the evaluation's limit ends it)
    fails that evaluation, and the process is stopped, not kept for the next."""
    assert _evaluate(tmp_path / "one", warm, 2, 1).correct
    checker = _checker(warm)
    job, root = scale_job(tmp_path / "two", "def scale(x):\n    return x * 2 + 1\n", seeds=1,
                          seed=3, time=False)  # fmt: skip
    (root / "task" / "reference.py").write_text(
        "import time\n\ndef make_inputs(shape, dtype, device, seed):\n    time.sleep(60)\n"
    )
    (root / "scratch").mkdir()
    rec = {"kind": "case", "shape": {"N": 8}, "dtype": "float32", "seed": 1, "file": "out.bin"}
    checker.released = False
    checker.send(checker_request(job, root, root, [rec], None), root / "scratch")
    got = checker.collect_trusted(2.0)
    assert got.report is None and "exceeded 2 s" in (got.error or "")
    assert not checker.alive() and CHECKER not in warm.spares.waiting()


def test_a_checker_that_held_much_memory_is_not_reused(
    tmp_path: Path, warm: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A candidate that returns a huge output leaves the checker that read it holding the
    buffers: that checker retires rather than check the next evaluations short of memory
    (the bound lowered here to below any process's footprint)."""
    assert _evaluate(tmp_path / "one", warm, 2, 1).correct
    [pid] = warm.spares.waiting()[CHECKER]
    assert _reuse.peak_resident(pid) > 1 << 20  # an interpreter with torch: megabytes
    monkeypatch.setattr(_reuse, "RETIRE_PEAK_BYTES", 1 << 20)
    assert _evaluate(tmp_path / "two", warm, 2, 1).correct  # checked by it, then retired
    _reaped(pid)
    assert pid not in warm.spares.waiting().get(CHECKER, [])


def test_what_a_request_s_task_code_changed_is_undone(tmp_path: Path) -> None:
    task = tmp_path / "task"
    task.mkdir()
    (task / "helper_of_this_task.py").write_text("VALUE = 1\n")
    before = (torch.backends.cudnn.benchmark, torch.get_default_dtype(), torch.is_grad_enabled(),
              torch.get_float32_matmul_precision(), os.getcwd())  # fmt: skip
    sys.path.insert(0, str(task))
    try:
        with fresh_state(str(task)):
            import helper_of_this_task  # noqa: F401

            os.chdir(task)
            torch.backends.cudnn.benchmark = not before[0]
            torch.set_default_dtype(torch.float64)
            torch.set_grad_enabled(False)
            torch.set_float32_matmul_precision("medium")
            sys.path.append(str(task / "more"))
            os.environ["AKA_TEST_SET_BY_A_REFERENCE"] = "1"
    finally:
        sys.path.remove(str(task))
        os.chdir(before[4])
    assert "helper_of_this_task" not in sys.modules
    assert str(task / "more") not in sys.path and "AKA_TEST_SET_BY_A_REFERENCE" not in os.environ
    assert torch.backends.cudnn.benchmark == before[0]
    assert torch.get_default_dtype() == before[1] and torch.is_grad_enabled() == before[2]
    assert torch.get_float32_matmul_precision() == before[3]


def test_the_working_directory_is_left_for_the_temporary_folder(tmp_path: Path) -> None:
    here = os.getcwd()
    try:
        with fresh_state(str(tmp_path)):
            os.chdir(tmp_path)
        assert os.getcwd() == os.path.realpath(tempfile.gettempdir())
    finally:
        os.chdir(here)


@pytest.fixture(autouse=True)
def host_pids() -> bool:
    """The checker's pid is told from the spares' list, which a PID namespace leaves alone."""
    return True
