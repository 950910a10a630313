"""The naive path (a process per stage) and where candidate outputs are handed over.

``aka bench eval`` compares aka's evaluation (one candidate process, one checker) with a
fresh interpreter per stage; the comparison only means something if both reach the same
verdicts. Candidate outputs go to a memory-backed folder when it has room, which candidate
code must not read.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aka.eval import _outputs, _pipeline
from aka.eval._outputs import output_dir
from aka.eval._pipeline import run_job

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "redteam"))
from redteam_corpus import CORPUS, scale_job


@pytest.mark.parametrize(
    ("name", "correct", "flag"),
    [("honest_vectorized", True, None), ("p10_warmup_replay", False, "timed_output_wrong")],
)
def test_a_process_per_stage_reaches_the_same_verdict(
    tmp_path: Path, name: str, correct: bool, flag: str | None
) -> None:
    text = (CORPUS / f"{name}.py").read_text()
    one_job, one_root = scale_job(tmp_path / "one", text)
    staged_job, staged_root = scale_job(tmp_path / "staged", text)
    one = run_job(one_job, one_root)
    staged = run_job(staged_job, staged_root, split_stages=True)
    assert (one.correct, staged.correct) == (correct, correct), (one.error, staged.error)
    assert [(c["seed"], c["ok"]) for c in one.cases] == [(c["seed"], c["ok"]) for c in staged.cases]
    assert len(staged.timing) == len(one.timing) == 1
    if flag is not None:
        assert flag in one.flags and flag in staged.flags


@pytest.fixture
def shm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder standing in for /dev/shm, with room enough."""
    folder = tmp_path / "shm"
    folder.mkdir()
    monkeypatch.setenv(_outputs.SHM_ENV, str(folder))
    monkeypatch.setattr(_outputs, "SHM_MIN_FREE", 1)
    return folder


def test_outputs_go_to_a_roomy_memory_folder_and_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shm: Path
) -> None:
    with output_dir(tmp_path / "root") as out:
        assert out.parent == shm and out.is_dir()
        (out / "00000.pt").write_bytes(b"x")
    assert not out.exists()
    monkeypatch.setattr(_outputs, "SHM_MIN_FREE", 1 << 62)  # no folder has that much room
    (tmp_path / "root").mkdir()
    with output_dir(tmp_path / "root") as out:
        assert out.parent == tmp_path / "root" and out.is_dir()
        (out / "o0.bin").write_bytes(b"x")
    assert not out.exists()
    monkeypatch.setenv(_outputs.SHM_ENV, str(tmp_path / "missing"))
    with output_dir(tmp_path / "root") as again:
        # the next process of the same evaluation (the held-out check) starts empty
        assert again.parent == tmp_path / "root" and not any(again.iterdir())


PEEK = """import glob, os


def scale(x):
    found = glob.glob("{pattern}") + glob.glob("/dev/shm/aka-out-*")
    for path in found:
        open(path, "rb").close()
    return x if found else x * 2 + 1
"""


def test_the_output_folder_is_out_of_the_candidates_sight(tmp_path: Path, shm: Path) -> None:
    """The folder the sealed core writes outputs to is hidden from candidate code (it is
    wrong only if it found something to read)."""
    job, root = scale_job(tmp_path, PEEK.format(pattern=f"{shm}/aka-out-*/*"))
    verdict = run_job(job, root)  # its open() trips the audit hook: judge its outputs
    assert verdict.cases and all(c["ok"] for c in verdict.cases), (verdict.cases, verdict.notes)


ORPHAN = """import ctypes, subprocess


def scale(x):
    subprocess.Popen(["sleep", "30"])
    ctypes.string_at(0)  # a crash (SIGSEGV)
"""


def test_a_process_killed_by_a_signal_is_not_blamed_for_what_it_left_running(
    tmp_path: Path,
) -> None:
    """A crash or an operator's kill can orphan a compiler the process waited on: that is
    a failed evaluation, not a background-process hack (the group is still killed)."""
    job, root = scale_job(tmp_path, ORPHAN)
    verdict = run_job(job, root)
    assert not verdict.correct
    assert "background_process" not in verdict.flags
    assert not verdict.timing  # it died in its first call: nothing was timed


def test_evaluations_of_one_task_in_their_own_folders_share_one_clean_timing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The baseline is timed alone once per task (and device and settings), not once per
    evaluation: each evaluation's folder is new, and the clean timing must not be keyed by it.

    The second evaluation may still time the baseline alone again, by design: when its
    baseline beside the candidate reads slower than the kept timing (a busy machine), the
    kept timing is checked against a fresh one. What must hold is that it found one kept."""
    from aka.eval import _baseline_ref
    from aka.eval._once import Once

    monkeypatch.setattr(_baseline_ref, "_cache", Once())
    looked_up: list[tuple[str, bool]] = []
    slowed = _baseline_ref.slowed

    def counted(key: str, *args: Any) -> Any:
        looked_up.append((key, key in _baseline_ref._cache))
        return slowed(key, *args)

    monkeypatch.setattr(_baseline_ref, "slowed", counted)
    text = (CORPUS / "honest_vectorized.py").read_text()
    for name in ("one", "two"):
        verdict = run_job(*scale_job(tmp_path / name, text))
        assert verdict.correct and verdict.timing, verdict.error
    (first, kept_before_first), (second, kept_before_second) = looked_up
    assert first == second
    assert not kept_before_first and kept_before_second
    assert _baseline_ref._cache.keys() == [first]


def test_stage_times_follow_the_marks_and_skip_stages_not_reached() -> None:
    marks = [
        {"name": "started", "t": 1.0},
        {"name": "loaded", "t": 1.5},
        {"name": "compiled", "t": 3.0},
        {"name": "checked", "t": 4.0},
        {"name": "timing_start", "shape": 0, "t": 4.1},
        {"name": "timing_end", "shape": 0, "t": 4.5},
        {"name": "timing_start", "shape": 1, "t": 4.6},
        {"name": "timing_end", "shape": 1, "t": 5.0},
    ]
    stages = _pipeline.stage_times(marks, start=0.5, end=5.25)
    expected = {"start": 0.5, "load": 0.5, "compile": 1.5, "correctness": 1.0}
    # The gate: from the last correctness call to the first shape's start (waiting for
    # other evaluations' timing); timing: from there to the last shape's end.
    assert stages == pytest.approx({**expected, "gate": 0.1, "timing": 0.9, "finish": 0.25})
    # A candidate that failed to compile: no correctness or timing stage.
    failed = _pipeline.stage_times(marks[:3], start=0.5, end=3.5)
    assert failed == pytest.approx({"start": 0.5, "load": 0.5, "compile": 1.5, "finish": 0.5})


def test_repeats_run_on_the_smallest_shape_and_timed_calls_are_audited(tmp_path: Path) -> None:
    """Every shape once per dtype, each case twice over different poison; the further
    seeds on the smallest shape only; audited timed calls of every timed shape."""
    job, root = scale_job(tmp_path, (CORPUS / "honest_vectorized.py").read_text())
    shapes = [{"N": 8192}, {"N": 1024}, {"N": 4096}]
    job = dataclasses.replace(job, shapes=shapes, seeds=3)
    _result, assembled, checked = _pipeline.run_processes(job, root)
    kinds: dict[str, list[int]] = {}
    for rec in assembled["records"]:
        kinds.setdefault(rec["kind"], []).append(rec["shape"]["N"])
    assert sorted(kinds["case"]) == [1024] * 6 + [4096] * 2 + [8192] * 2
    assert set(kinds["timed"]) == {1024, 4096, 8192}  # the last call of each, at least
    assert len(assembled["twins"]) == 5
    assert all(r.get("ok") for r in checked.results), checked


def test_folders_of_dead_evaluators_are_swept(tmp_path: Path, shm: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    tag = _outputs._owner_tag()
    assert tag is not None  # Linux: /proc/self/ns/pid
    names = {
        "dead": f"aka-out-{tag}-{dead.pid}-abc",
        "alive": f"aka-out-{tag}-{os.getpid()}-abc",
        "other namespace": f"aka-out-1-{dead.pid}-abc",
        "not ours": "aka-out-junk",
    }
    for name in names.values():
        (shm / name).mkdir()
        (shm / name / "00000.pt").write_bytes(b"x")
    assert _outputs.sweep_orphans(shm, tag) == [shm / names["dead"]]
    assert sorted(p.name for p in shm.iterdir()) == sorted(
        n for k, n in names.items() if k != "dead"
    )
    with output_dir(tmp_path / "root") as out:  # an evaluation sweeps, then names its own
        assert out.name.startswith(f"aka-out-{tag}-{os.getpid()}-")
