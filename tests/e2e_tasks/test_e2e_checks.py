"""The task-format checks the kernel suites get in tests/tasks, applied to the e2e tasks.

The standalone checker (tools/task_check.py) runs each baseline model against its
reference under the Triton interpreter, proves null answers and a bfloat16-rounded
answer fail, and checks determinism, seed dependence and untouched inputs. On top:
neither the starting kernels nor the known-faster candidates use a forbidden name, and
each GPU workload is sized so that an ideal forward takes between 10 us and 10 ms.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest
import torch
from e2e_helpers import CANDIDATES, E2E, REPO, load

from aka.eval import forbidden_uses
from aka.tasks import Task, load_task

checker = load(REPO / "tools" / "task_check.py")
TASKS = [load_task(p.parent, root=REPO / "tasks") for p in sorted(E2E.glob("*/task.yaml"))]
IDS = [t.key for t in TASKS]
H200_COPY_BYTES_PER_S = 4.3e12
H200_BF16_FLOPS = 790e12


@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_task_passes_the_checker(task: Task) -> None:
    report = checker.check_task(task)
    assert report.ok, "\n".join(report.problems)
    assert report.trials > 0


@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_metadata(task: Task) -> None:
    spec = task.spec
    assert spec.type == "e2e" and spec.name == task.path.name
    assert spec.pass_shape and spec.entry_file not in spec.editable
    assert len(spec.shapes.tuning) >= 2 and len(spec.shapes.heldout) >= 4
    assert spec.shapes.cpu and spec.shapes.cpu_heldout
    assert spec.dtypes[0] != "float32"  # the timed dtype is the served one


@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_no_forbidden_names_in_the_start_or_the_candidate(task: Task) -> None:
    spec = task.spec
    for folder in (task.path / spec.source_dir, CANDIDATES / task.path.name):
        for name in spec.editable:
            found = forbidden_uses(name, (folder / name).read_text(), spec.forbidden)
            assert not found, [f.evidence() for f in found]


@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_gpu_workloads_are_not_launch_bound(task: Task) -> None:
    ref = checker.load_module(task.path / task.spec.reference)
    for shape in task.spec.shapes.tuning:
        for name in task.spec.dtypes:
            work = ref.work(shape, getattr(torch, name))
            ideal = max(work["bytes"] / H200_COPY_BYTES_PER_S, work["flops"] / H200_BF16_FLOPS)
            assert 10e-6 <= ideal <= 10e-3, f"{shape} {name}: ideal {ideal * 1e6:.1f} us"
