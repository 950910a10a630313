"""Each task is validated in its own process under a memory cap; every result is printed.

One task that dies (killed, out of memory) must not take the others' results with it,
and every failure says how to fix it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from aka import events as ev
from aka_ledger import Ledger

AFFINE = "torch/ops/affine"
REF = (Path(__file__).resolve().parents[1] / "fixtures/tasks" / AFFINE / "reference.py").read_text()


def _clone(tasks_root: Path, name: str, reference_tail: str = "") -> Path:
    dest = tasks_root / "torch" / "ops" / name
    shutil.copytree(tasks_root / AFFINE, dest)
    spec = yaml.safe_load((dest / "task.yaml").read_text())
    spec["name"] = name
    (dest / "task.yaml").write_text(yaml.safe_dump(spec))
    if reference_tail:
        (dest / "reference.py").write_text(REF + reference_tail)
    return dest


KILLED = """

import os as _os
import signal as _signal

_reference = reference


def reference(x):
    _os.kill(_os.getpid(), _signal.SIGKILL)  # the process dies mid-validation
    return _reference(x)
"""

GREEDY = """

_reference = reference


def reference(x):
    torch.empty(1 << 33, dtype=torch.uint8)  # 8 GiB (untouched): over a 4 GiB cap
    return _reference(x)
"""


def test_a_killed_task_does_not_hide_the_others(tasks_root: Path, tmp_path: Path, cli) -> None:
    _clone(tasks_root, "killed", KILLED)
    res = cli(
        "tasks", "validate", "--root", str(tasks_root), "--device", "cpu", "--quick",
        "--ledger", str(tmp_path / "led"),
    )  # fmt: skip
    assert res.code == 1
    assert f"PASS  {AFFINE}" in res.out  # printed though its neighbour died
    assert "FAIL  torch/ops/killed" in res.out
    assert "killed by signal 9" in res.out and "fix:" in res.out
    assert "1 of 2 task(s) failed" in res.err


def test_memory_cap_applies_to_each_task(tasks_root: Path, tmp_path: Path, cli) -> None:
    _clone(tasks_root, "greedy", GREEDY)
    res = cli(
        "tasks", "validate", "torch/ops/greedy", "--root", str(tasks_root), "--device", "cpu",
        "--quick", "--memory-gb", "4", "--ledger", str(tmp_path / "led"),
    )  # fmt: skip
    assert res.code == 1
    assert "reference_stage" in res.out and "allocate" in res.out and "fix:" in res.out


def test_every_failure_names_a_fix(tasks_root: Path, tmp_path: Path, cli) -> None:
    bad = _clone(tasks_root, "broken")
    spec = yaml.safe_load((bad / "task.yaml").read_text())
    spec |= {"targets": ["no_such_symbol"], "forbidden": ["torch.no_such_op"]}
    spec["shapes"]["cpu_heldout"] = spec["shapes"]["cpu"]
    (bad / "task.yaml").write_text(yaml.safe_dump(spec))
    (bad / "reference.py").write_text(REF.replace("x.double() * 2 + 1", "x.double() * 1e-9"))
    res = cli(
        "tasks", "validate", "torch/ops/broken", "--root", str(tasks_root), "--device", "cpu",
        "--quick", "--ledger", str(tmp_path / "led"),
    )  # fmt: skip
    fails = [line for line in res.out.splitlines() if line.strip().startswith("fail")]
    names = {line.split()[1].rstrip(":") for line in fails}
    assert {"targets_exist", "forbidden_resolve", "heldout_shapes", "null_zeros"} <= names
    assert all("(fix: " in line for line in fails), fails


def test_a_task_for_another_device_says_so(tasks_root: Path, tmp_path: Path, cli) -> None:
    gpu = _clone(tasks_root, "gpu_only")
    spec = yaml.safe_load((gpu / "task.yaml").read_text())
    spec["devices"] = ["cuda"]
    spec["shapes"]["tuning"] = [{"N": 1 << 26}]
    (gpu / "task.yaml").write_text(yaml.safe_dump(spec))
    res = cli(
        "tasks", "validate", "torch/ops/gpu_only", "--root", str(tasks_root), "--device", "cpu",
        "--ledger", str(tmp_path / "led"),
    )  # fmt: skip
    assert res.code == 0, res.out + res.err
    assert "runs on ['cuda'] only" in res.out and "--device cuda" in res.out


def test_a_task_for_another_device_too_big_to_run_here_is_skipped_not_failed(
    tasks_root: Path, tmp_path: Path, cli
) -> None:
    """Its smallest shape is small, so the reference checks run here as a courtesy; what
    the forward builds is not (attention over many tokens): out of memory here is a skip
    that names the device to validate on, not a failure of the task."""
    gpu = _clone(tasks_root, "gpu_only_greedy", GREEDY)
    spec = yaml.safe_load((gpu / "task.yaml").read_text())
    spec["devices"] = ["cuda"]
    (gpu / "task.yaml").write_text(yaml.safe_dump(spec))
    res = cli(
        "tasks", "validate", "torch/ops/gpu_only_greedy", "--root", str(tasks_root),
        "--device", "cpu", "--quick", "--memory-gb", "4", "--ledger", str(tmp_path / "led"),
    )  # fmt: skip
    assert res.code == 0, res.out + res.err
    assert "needs more memory than cpu gives this check" in res.out, res.out
    assert "--device cuda" in res.out


HOLDER = """

import os as _os
import time as _time

_reference = reference


def reference(x):
    if not _os.path.exists(MARK + ".done"):  # the first call: busy for a while
        open(MARK, "w").close()
        _time.sleep(4)
        _os.remove(MARK)
        open(MARK + ".done", "w").close()
    return _reference(x)
"""

CROWDED = """

import os as _os
import time as _time

_reference = reference


def reference(x):
    deadline = _time.time() + 30
    while not _os.path.exists(MARK + ".done") and _time.time() < deadline:
        if _os.path.exists(MARK):
            raise RuntimeError("another task is being validated at the same time")
        _time.sleep(0.05)
    return _reference(x)
"""


def test_jobs_validate_a_failure_again_alone(tasks_root: Path, tmp_path: Path, cli) -> None:
    """``--jobs 2``: a task that fails only while another is validated beside it (as
    timing checks do under load) is validated again alone, and that result stands."""
    mark = f"\nMARK = {str(tmp_path / 'busy')!r}\n"
    _clone(tasks_root, "holder", mark + HOLDER)
    _clone(tasks_root, "crowded", mark + CROWDED)
    args = ("tasks", "validate", "torch/ops/holder", "torch/ops/crowded", "--root",
            str(tasks_root), "--device", "cpu", "--quick", "--ledger", str(tmp_path / "led"))  # fmt: skip
    res = cli(*args, "--jobs", "2")
    assert res.code == 0, res.out + res.err
    assert "PASS  torch/ops/holder" in res.out
    crowded = res.out[res.out.index("PASS  torch/ops/crowded") :]
    assert "validated again alone after failing with 2 at once" in crowded
    # Shown as soon as it failed under load, with the checks that failed.
    early = res.out.index("....  torch/ops/crowded: failed with 2 at once (reference_stage)")
    assert early < res.out.index("PASS  torch/ops/crowded")
    # Both are recorded: the failure under load, then the pass alone.
    with Ledger.open(tmp_path / "led", registry=ev.REGISTRY) as led:
        got = [e.payload for e in led.events(types=["TaskValidated"])]
    crowded_ok = [
        p.ok for p in got if isinstance(p, ev.TaskValidated) and p.task.endswith("crowded")
    ]
    assert crowded_ok == [False, True]


def test_jobs_keep_a_real_failure(tasks_root: Path, tmp_path: Path, cli) -> None:
    _clone(tasks_root, "killed", KILLED)
    res = cli("tasks", "validate", "--root", str(tasks_root), "--device", "cpu", "--quick",
              "--jobs", "2", "--ledger", str(tmp_path / "led"))  # fmt: skip
    assert res.code == 1
    assert f"PASS  {AFFINE}" in res.out
    assert "FAIL  torch/ops/killed" in res.out and "killed by signal 9" in res.out
    assert "validated again alone" in res.out
    assert "1 of 2 task(s) failed" in res.err


GATE_WITNESS = """

import os as _os

_reference = reference


def reference(x):
    with open(WITNESS, "a") as _f:
        _f.write(_os.environ.get("AKA_EVAL_HOST_GATE", "-") + "\\n")
    return _reference(x)
"""


def test_tasks_validated_at_once_share_one_timing_gate(
    tasks_root: Path, tmp_path: Path, cli
) -> None:
    """With ``--jobs`` the task processes get one host-gate folder; alone (the retry, or
    ``--jobs 1``) none, since there is nobody to share the device with."""
    witness = tmp_path / "gates"
    for name in ("left", "right"):
        _clone(tasks_root, name, f"\nWITNESS = {str(witness)!r}\n" + GATE_WITNESS)
    args = ("tasks", "validate", "torch/ops/left", "torch/ops/right", "--root", str(tasks_root),
            "--device", "cpu", "--quick", "--ledger", str(tmp_path / "led"))  # fmt: skip
    assert cli(*args, "--jobs", "2").code == 0
    seen = set(witness.read_text().split())
    assert len(seen) == 1 and seen != {"-"}
    assert not Path(seen.pop()).exists()  # the folder goes with the validation
    witness.unlink()
    assert cli(*args, "--jobs", "1").code == 0
    assert set(witness.read_text().split()) == {"-"}


def test_a_task_starts_only_while_enough_gpu_memory_is_free(monkeypatch) -> None:
    """Tasks start one at a time; while another runs, a new one waits for free memory
    (but never when it would be alone)."""
    import threading
    import time

    from aka import validate_isolated as vi

    monkeypatch.setattr(vi, "ADMIT_GAP_S", 0.0)
    free = {"now": 0.05}
    admission = vi._Admission("cuda:0", lambda _d: free["now"])
    started: list[str] = []
    with admission.slot():  # alone: starts although almost nothing is free
        started.append("first")

        def second() -> None:
            with admission.slot():
                started.append("second")

        t = threading.Thread(target=second)
        t.start()
        time.sleep(1.5)
        assert started == ["first"]  # the first still runs, and memory is short
        free["now"] = 0.5
        t.join(timeout=5)
    assert started == ["first", "second"]
    unknown = vi._Admission("cuda:0", lambda _d: None)  # no nvidia-smi: nothing waits
    with unknown.slot(), unknown.slot():
        pass
