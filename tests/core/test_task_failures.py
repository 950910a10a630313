"""A task that fails by itself is an infrastructure error, never the agent's score.

A reference that raises, or starting sources that do not compile, fail every candidate;
charging that to the agent (a 0 or a 20 and a spent try) poisons rewards and comparisons.
These tests break a task the way a task author does, run it, and check that nothing is
charged, that the message names the task's file and the fix, and that `aka resume`
runs the waiting attempts once the folder is fixed.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from arena_helpers import write_config

from aka import events as ev
from aka.api import Evaluator
from aka.config import TimingSettings
from aka.errors import TaskError
from aka.events import REGISTRY
from aka_ledger import Envelope, Ledger

BROKEN = "torch/ops/broken"
GOOD = "torch/ops/affine"
RAISING = "    raise RuntimeError('the reference divides by a missing constant')\n"


def _break_reference(task: Path) -> str:
    """Make the reference raise, as a task author's typo does; returns the good text."""
    ref = task / "reference.py"
    good = ref.read_text()
    ref.write_text(good.replace("    return x.double() * 2 + 1\n", RAISING))
    assert ref.read_text() != good
    return good


def _events(ledger_dir: Path, run_id: str) -> list[Envelope]:
    with Ledger.open(ledger_dir, registry=REGISTRY, create=False) as led:
        return led.events(run_id=run_id)


def _finals(envs: list[Envelope], task: str) -> list[ev.Scored]:
    return [
        e.payload
        for e in envs
        if isinstance(e.payload, ev.Scored)
        and e.payload.purpose == "final"
        and (e.attempt_key or "").startswith(task + "#")
    ]


def _finished(envs: list[Envelope], task: str) -> list[ev.AttemptFinished]:
    return [
        e.payload
        for e in envs
        if isinstance(e.payload, ev.AttemptFinished) and (e.attempt_key or "").startswith(task)
    ]


def test_a_crashing_reference_is_not_charged_and_resume_runs_it_once_fixed(
    cli, tmp_path: Path, tasks_root: Path, ledger_dir: Path
) -> None:
    shutil.copytree(tasks_root / GOOD, tasks_root / BROKEN)
    good_reference = _break_reference(tasks_root / BROKEN)
    cfg = write_config(tmp_path, tasks_root, tasks=[BROKEN, GOOD], repeats=2, max_tries=1)
    common = ["--ledger", str(ledger_dir)]

    first = cli("run", str(cfg), "--run-id", "broken", *common)
    assert first.code == 3, first.err
    assert f"{BROKEN}/reference.py" in first.err and "the reference divides" in first.err
    assert "aka resume broken" in first.err and "Traceback" not in first.err
    envs = _events(ledger_dir, "broken")
    assert _finals(envs, BROKEN) == [], "a broken task's failure became the agent's score"
    assert [f.status for f in _finished(envs, BROKEN)] == ["task"], (
        "the second attempt of the broken task must wait, not run an agent for nothing"
    )
    assert len(_finals(envs, GOOD)) == 2 and all(s.correct for s in _finals(envs, GOOD))
    assert not any(isinstance(e.payload, ev.RunFinished) for e in envs)

    again = cli("resume", "broken", *common)  # nothing fixed: still waiting, nothing spent
    assert again.code == 3 and f"{BROKEN}/reference.py" in again.err
    assert len(_finished(_events(ledger_dir, "broken"), BROKEN)) == 1

    (tasks_root / BROKEN / "reference.py").write_text(good_reference)
    fixed = cli("resume", "broken", *common)
    assert fixed.code == 0, fixed.err
    envs = _events(ledger_dir, "broken")
    refreshed = [e.payload for e in envs if isinstance(e.payload, ev.TaskRefreshed)]
    assert [r.task for r in refreshed] == [BROKEN]
    finals = _finals(envs, BROKEN)
    assert len(finals) == 2 and all(s.correct for s in finals), "max_tries=1 and no try spent"
    started = [
        e.payload
        for e in envs
        if isinstance(e.payload, ev.EvaluationStarted)
        and e.payload.purpose == "final"
        and (e.attempt_key or "").startswith(BROKEN)
    ]
    assert {s.task for s in started[-2:]} == {refreshed[0].tree}, "scores name the fixed tree"
    assert any(isinstance(e.payload, ev.RunFinished) for e in envs)

    held = cli("heldout", "broken", *common, "--format", "json")
    assert held.code == 0, held.err
    links = [
        e.payload
        for e in _events(ledger_dir, "broken")
        if isinstance(e.payload, ev.HeldoutEvaluated) and e.payload.task == BROKEN
    ]
    assert links and {h.task_tree for h in links} == {refreshed[0].tree}


def test_starting_sources_that_do_not_compile_are_the_tasks_failure(
    cli, tmp_path: Path, tasks_root: Path, ledger_dir: Path
) -> None:
    kernel = tasks_root / GOOD / "source" / "kernel.py"
    kernel.write_text(kernel.read_text() + "\ndef broken(:\n")
    cfg = write_config(tmp_path, tasks_root, max_tries=1)
    out = cli("run", str(cfg), "--run-id", "nocompile", "--ledger", str(ledger_dir))
    assert out.code == 3, out.err
    assert f"{GOOD}/source/kernel.py" in out.err and "aka resume nocompile" in out.err
    envs = _events(ledger_dir, "nocompile")
    kinds = Counter(type(e.payload).__name__ for e in envs)
    assert _finals(envs, GOOD) == [] and kinds["RunFinished"] == 0
    assert [f.status for f in _finished(envs, GOOD)] == ["task"]


def test_the_api_reports_a_broken_task_and_records_no_reward(
    tasks_root: Path, ledger_dir: Path
) -> None:
    _break_reference(tasks_root / GOOD)
    source = (tasks_root / GOOD / "source" / "kernel.py").read_text()
    timing = TimingSettings(max_time_s=0.2, min_samples=5)
    with Evaluator(ledger_dir, tasks_root=tasks_root, device="cpu", timing=timing) as service:
        with pytest.raises(TaskError) as caught:
            service.evaluate(GOOD, {"kernel.py": source})
        run_id = service.run_id
    assert f"{GOOD}/reference.py" in caught.value.render()
    envs = _events(ledger_dir, run_id)
    assert _finals(envs, GOOD) == []
    assert [f.status for f in _finished(envs, GOOD)] == ["task"]


def test_starting_sources_wrong_on_a_held_out_shape_are_the_tasks_failure(
    tasks_root: Path, ledger_dir: Path
) -> None:
    # every score checks the held-out shape (N=4099 on the CPU); a baseline that fails
    # there makes every reward 0 unless the task itself is asked the same way
    kernel = tasks_root / GOOD / "source" / "kernel.py"
    kernel.write_text(
        "import torch\n\n\ndef affine(x):\n    return x * 2 + 1 if x.numel() != 4099 else x * 3\n"
    )
    timing = TimingSettings(max_time_s=0.2, min_samples=5)
    with Evaluator(ledger_dir, tasks_root=tasks_root, device="cpu", timing=timing) as service:
        with pytest.raises(TaskError) as caught:
            service.evaluate(GOOD, {"kernel.py": kernel.read_text()})
        run_id = service.run_id
    said = caught.value.render()  # for the task's owner, not the policy: the shape is named
    assert said.startswith(f"{GOOD}/task.yaml: ") and "{'N': 4099}" in said, said
    envs = _events(ledger_dir, run_id)
    assert _finals(envs, GOOD) == []
    assert [f.status for f in _finished(envs, GOOD)] == ["task"]


def _unmet_variant(tasks_root: Path) -> dict[str, str]:
    """GOOD with an input variant (a held-out shape with an ``aka_`` key, as an imported
    task's stress case) whose float32 overflows where the float64 reference does not:
    one the task's own code cannot meet. Returns its starting source."""
    import yaml

    folder = tasks_root / GOOD
    spec = yaml.safe_load((folder / "task.yaml").read_text())
    held = spec["shapes"]["cpu_heldout"][0]
    spec["shapes"]["cpu_heldout"].append({**held, "aka_stressed": 1})
    (folder / "task.yaml").write_text(yaml.safe_dump(spec))
    reference = folder / "reference.py"
    reference.write_text(
        reference.read_text().replace(
            "    return ((torch.randn(",
            "    scale = 1e38 if shape.get('aka_stressed') else 1.0\n"
            "    return ((scale * torch.randn(",
        )
    )
    return {"kernel.py": (folder / "source" / "kernel.py").read_text()}


def test_a_variant_the_task_s_own_code_fails_here_is_held_against_no_candidate(
    tasks_root: Path, ledger_dir: Path
) -> None:
    """A candidate is held to no more than the task's own code meets on the same inputs:
    the variant case it fails where the starting code fails too is recorded, marked
    excused, and the candidate is correct (imported stress cases were chosen on the CPU,
    and a GPU's libraries can miss one the CPU's met). A candidate that also fails a
    plain held-out case is still wrong."""
    source = _unmet_variant(tasks_root)
    timing = TimingSettings(max_time_s=0.2, min_samples=5)
    with Evaluator(ledger_dir, tasks_root=tasks_root, device="cpu", timing=timing) as service:
        fine = service.evaluate(GOOD, source)
        fitted = (
            "import torch\n\n\ndef affine(x):\n    return x * 2 + 1 if x.numel() != 4099 else x\n"
        )
        wrong = service.evaluate(GOOD, {"kernel.py": fitted})  # wrong at N = 4099 only
        run_id = service.run_id
    assert fine.correct, fine.error
    assert not wrong.correct and wrong.error, wrong
    envs = _events(ledger_dir, run_id)
    finals = _finals(envs, GOOD)
    assert [s.correct for s in finals] == [True, False]
    checked = {e.payload.eval_id: e.payload for e in envs
               if isinstance(e.payload, ev.CorrectnessChecked)}  # fmt: skip
    first, second = (checked[s.eval_id] for s in finals)
    excused = [c for c in first.cases if c.excused]
    assert excused and all(c.shape.get("aka_stressed") == 1 for c in excused)
    assert all(not c.ok and c.heldout for c in excused)
    assert any(c.heldout and not c.ok and not c.excused for c in second.cases)


def test_a_timed_held_out_re_evaluation_excusing_a_variant_still_reports_a_speedup(
    tmp_path: Path, tasks_root: Path, ledger_dir: Path
) -> None:
    """``aka heldout`` times candidates on the held-out shapes. A failed case skips the
    settling of a timing, so the excused verdict drops the one it took; the shapes with
    no excused case are then timed again in a folder laid out afresh: the starting code
    is correct there with a speedup, its variant case recorded as excused, and the
    baseline's own row (untimed) is correct too."""
    from aka.heldout import run_heldout
    from aka.orchestrator import run

    _unmet_variant(tasks_root)
    cfg = write_config(tmp_path, tasks_root, max_tries=1)
    with Ledger.open(ledger_dir, registry=REGISTRY, create=True) as led:
        run_id = run(led, cfg)
        (row,) = run_heldout(led, run_id)
    assert row.heldout_correct and row.baseline_correct, row
    assert row.heldout_speedup is not None and row.heldout_speedup > 0, row
    envs = _events(ledger_dir, run_id)
    checked = {e.payload.eval_id: e.payload for e in envs
               if isinstance(e.payload, ev.CorrectnessChecked)}  # fmt: skip
    held = checked[row.heldout_eval_id]
    excused = [c for c in held.cases if c.excused]
    assert excused and all(c.shape.get("aka_stressed") == 1 and not c.ok for c in excused)
    timed = {
        json.dumps(t.shape, sort_keys=True)
        for e in envs
        if isinstance(e.payload, ev.KernelTimed) and e.payload.eval_id == row.heldout_eval_id
        for t in e.payload.shapes
    }
    assert timed and not any("aka_stressed" in t for t in timed), timed


def test_validation_of_a_task_with_a_variant_its_own_code_fails_here_passes_its_held_out(
    tasks_root: Path, ledger_dir: Path
) -> None:
    """``aka tasks validate`` judges the baseline on the held-out shapes as a held-out
    re-evaluation (every case held out): the same rule, so an imported task whose stress
    case the device's float32 misses validates, its variant case recorded as excused."""
    from aka.validate import validate_task

    _unmet_variant(tasks_root)
    with Ledger.open(ledger_dir, registry=REGISTRY, create=True) as led:
        res = validate_task(led, tasks_root / GOOD, root=tasks_root, device="cpu", run_id="v")
        checked = [e.payload for e in led.events(run_id="v", types=["CorrectnessChecked"])]
    statuses = {c.name: c.status for c in res.checks}
    assert statuses["baseline_passes_heldout"] == "pass", res.checks
    excused = [c for p in checked for c in p.cases if c.excused]
    assert excused and all(c.shape.get("aka_stressed") == 1 and not c.ok for c in excused)


def test_a_recorded_task_that_no_longer_loads_is_the_tasks_failure(
    tmp_path: Path, tasks_root: Path, ledger_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run started by an older aka whose task.yaml this one refuses (a rule tightened
    since, like duplicate keys): resuming it must not charge the agent for the spec."""
    from aka import orchestrator, workspace
    from aka.config import load_config
    from aka.errors import InputError

    cfg = write_config(tmp_path, tasks_root, max_tries=1)
    with Ledger.open(ledger_dir, registry=REGISTRY) as led:
        rid = orchestrator.start_run(
            led, load_config(cfg), config_path=str(cfg), run_id="old", tasks_root=tasks_root
        )

        def refuse(folder: Path, **_: object) -> None:
            raise InputError("duplicate key 'shapes'", where=str(folder / "task.yaml"))

        monkeypatch.setattr(workspace, "load_task", refuse)
        with pytest.raises(TaskError) as caught:
            orchestrator.drive(led, rid)
        envs = led.events(run_id=rid)
    assert f"{GOOD}/task.yaml" in caught.value.render() and "duplicate key" in str(caught.value)
    assert "aka resume old" in caught.value.render()
    assert [f.status for f in _finished(envs, GOOD)] == ["task"]
    assert not any(isinstance(e.payload, ev.AgentStarted) for e in envs)


def test_a_task_keyed_two_folders_deep_is_judged_not_mistaken_for_broken(
    cli, tmp_path: Path, tasks_root: Path, ledger_dir: Path
) -> None:
    """The candidate process hides the task suite; for a task materialized from the
    content store, walking the key's depth up once hid the temporary folder holding the
    evaluation itself, so every candidate (and the baseline) of a two-part key failed."""
    shutil.copytree(tasks_root / GOOD, tasks_root / "ops" / "affine")
    cfg = write_config(tmp_path, tasks_root, tasks=["ops/affine"])
    out = cli("run", str(cfg), "--run-id", "shallow", "--ledger", str(ledger_dir))
    assert out.code == 0, out.err
    [final] = _finals(_events(ledger_dir, "shallow"), "ops/affine")
    assert final.compiled and final.correct, final.error
