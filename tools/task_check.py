"""Quick standalone check of bundled task folders on a CPU machine.

Usage::

    python tools/task_check.py [--root tasks] [SELECTOR ...]
    python tools/task_check.py --markdown     # the task tables of docs/tasks.md
    python tools/task_check.py --device cuda  # on a GPU: baselines at GPU shapes

Each selector is a path relative to the tasks root (a folder selects every task below
it); with none, every task is checked. For tasks whose ``devices`` include ``cpu`` the
baseline entry runs under the Triton interpreter (``TRITON_INTERPRET=1`` is set before
torch or triton is imported) on every cpu and cpu_heldout shape, dtype and seed, and:

- the baseline output matches the reference within the task's tolerance for that dtype;
- the reference is deterministic (two calls give identical results);
- the baseline leaves its inputs untouched;
- null answers fail the tolerance on every trial: zeros, random garbage of the right
  shape, an empty tensor, and a copy of any input with as many elements as the output;
- the reference depends on the seed (seed 0 and seed 1 give different outputs);
- for float32, the reference rounded to bfloat16 fails the tolerance (so a kernel that
  silently computes in low precision is caught).

Tasks that run only on ``cuda`` (CUDA C++ tasks) get the same reference and null checks
on CPU at their smallest GPU shape, and every ``.cu`` file of their sources is compiled
with ``nvcc -c -std=c++17 -arch=sm_90`` (skipped, with the reason, when nvcc is missing).
Every task's ``tunables`` must name module-level integer constants of the entry file
whose current value is among the listed ones.

With ``--device cuda`` (on a GPU machine) every task that runs on cuda has its baseline
run on each tuning and held-out shape and dtype (one seed) against the reference, with
the same null-answer checks, using real Triton and CUDA kernels.

This is a stand-in for the evaluator-based ``aka tasks validate``; it shares the task
loader (``aka.tasks``) but not the evaluator.
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before anything imports triton

import argparse
import ast
import hashlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from aka.kinds._kernel_checks import downgrade_passes, null_answers, passes
from aka.tasks import Task, discover, select

REPO = Path(__file__).resolve().parent.parent
NVCC_FLAGS = ["-c", "-std=c++17", "-arch=sm_90"]


@dataclass
class TaskReport:
    """The outcome of checking one task: problems found, skips and notes."""

    key: str
    problems: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    trials: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems


def load_module(path: Path) -> ModuleType:
    """Import a file under a name unique to its path, so same-named files never clash."""
    digest = hashlib.blake2s(str(path.resolve()).encode(), digest_size=6).hexdigest()
    name = f"_aka_task_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _clone(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in inputs)


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return all(
        torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y
        for x, y in zip(a, b, strict=True)
    )


def _call(fn: Callable[..., Any], inputs: tuple[Any, ...], shape: dict[str, int], kw: bool) -> Any:
    return fn(*inputs, **shape) if kw else fn(*inputs)


def check_trials(
    task: Task,
    ref_mod: ModuleType,
    entry: Callable[..., Any] | None,
    shapes: list[dict[str, int]],
    report: TaskReport,
    seeds: int | None = None,
    device: str = "cpu",
) -> None:
    """Reference, baseline and null checks over ``shapes`` x dtypes x seeds on CPU.

    With ``entry`` None (a task that cannot run on CPU) only the reference and the null
    answers are checked. ``seeds`` caps the seeds per shape and dtype (default: the
    task's ``seeds``).
    """
    spec = task.spec
    kw = spec.pass_shape
    for shape in shapes:
        for dtype_name in spec.dtypes:
            dtype = getattr(torch, dtype_name)
            tol = spec.tolerances[dtype_name]
            where = f"shape {shape} {dtype_name}"
            refs = []
            for seed in range(min(spec.seeds, seeds or spec.seeds)):
                inputs = ref_mod.make_inputs(shape, dtype, device, seed)
                pristine = _clone(inputs)
                ref = _call(ref_mod.reference, _clone(inputs), shape, kw)
                again = _call(ref_mod.reference, _clone(inputs), shape, kw)
                refs.append(ref)
                report.trials += 1
                if not torch.equal(ref, again):
                    report.problems.append(f"{where} seed {seed}: reference is not deterministic")
                if entry is not None:
                    out = _call(entry, inputs, shape, kw)
                    if not passes(out, ref, tol):
                        err = _max_err(out, ref)
                        report.problems.append(
                            f"{where} seed {seed}: baseline fails the tolerance ({err})"
                        )
                    if not _same(inputs, pristine):
                        report.problems.append(f"{where} seed {seed}: baseline mutates its inputs")
                for label, null in null_answers(pristine, ref, seed).items():
                    if passes(null, ref, tol):
                        report.problems.append(f"{where} seed {seed}: null answer '{label}' passes")
                if dtype == torch.float32 and downgrade_passes(ref, tol):
                    report.problems.append(
                        f"{where} seed {seed}: a bfloat16-rounded answer passes the float32 "
                        "tolerance (a precision downgrade would go unnoticed)"
                    )
            if len(refs) > 1 and torch.equal(refs[0], refs[1]):
                report.problems.append(f"{where}: reference output does not depend on the seed")


def _max_err(out: Any, ref: torch.Tensor) -> str:
    if not isinstance(out, torch.Tensor):
        return f"returned {type(out).__name__}"
    if tuple(out.shape) != tuple(ref.shape):
        return f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
    diff = (out.detach().to(ref.device).double() - ref.double()).abs()
    return f"max abs err {float(diff.max()):.3g}"


def check_tunables(task: Task, report: TaskReport) -> None:
    """Each tunable is a module-level int constant of the entry file with a listed value."""
    entry_path = task.path / task.spec.source_dir / task.spec.entry_file
    consts: dict[str, object] = {}
    for node in ast.parse(entry_path.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    consts[target.id] = node.value.value
    for name, values in task.spec.tunables.items():
        value = consts.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            report.problems.append(f"tunable {name} is not a module-level int in {entry_path.name}")
        elif value not in values:
            report.problems.append(f"tunable {name} = {value} is not among {values}")


def compile_cuda(task: Task, report: TaskReport) -> None:
    """Compile every .cu file of the task's sources with nvcc (skip if nvcc is missing)."""
    sources = sorted((task.path / task.spec.source_dir).glob("*.cu"))
    if not sources:
        return
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        report.skipped.append("nvcc not found on PATH: CUDA sources not compiled")
        return
    with tempfile.TemporaryDirectory() as tmp:
        for src in sources:
            obj = Path(tmp) / f"{src.stem}.o"
            proc = subprocess.run(
                [nvcc, *NVCC_FLAGS, str(src), "-o", str(obj)],
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode != 0:
                report.problems.append(f"nvcc failed on {src.name}:\n{proc.stderr.strip()}")


def _smallest(shapes: list[dict[str, int]]) -> dict[str, int]:
    def size(s: dict[str, int]) -> int:
        n = 1
        for v in s.values():
            n *= v
        return n

    return min(shapes, key=size)


def check_task(task: Task, device: str = "cpu") -> TaskReport:
    """Run every check that applies to ``task`` on ``device``.

    On ``cpu`` see the module docstring. On ``cuda`` (a GPU machine, with
    ``TRITON_INTERPRET`` unset before the task's modules load) the baseline runs on every
    tuning and held-out shape and dtype with one seed, against the reference on the GPU.
    """
    report = TaskReport(key=task.key)
    start = time.perf_counter()
    spec = task.spec
    try:
        check_tunables(task, report)
        ref_mod = load_module(task.path / spec.reference)
        entry_mod = load_module(task.path / spec.source_dir / spec.entry_file)
        entry = getattr(entry_mod, spec.entry_symbol, None)
        if not callable(entry):
            report.problems.append(f"entry {spec.entry} is not a callable")
        elif device != "cpu":
            if "cuda" in spec.devices:
                shapes = spec.shapes.tuning + spec.shapes.heldout
                check_trials(task, ref_mod, entry, shapes, report, seeds=1, device=device)
            else:
                report.skipped.append(f"runs only on {spec.devices}: nothing to do on {device}")
            report.seconds = time.perf_counter() - start
            return report
        elif "cpu" in spec.devices:
            shapes = spec.shapes.cpu + spec.shapes.cpu_heldout
            check_trials(task, ref_mod, entry, shapes, report)
        else:
            report.skipped.append(f"runs only on {spec.devices}: baseline not run on CPU")
            smallest = _smallest(spec.shapes.tuning + spec.shapes.heldout)
            # GPU shapes are large for a CPU: two seeds show determinism and seed use.
            check_trials(task, ref_mod, None, [smallest], report, seeds=2)
        compile_cuda(task, report)
    except Exception as exc:  # a broken task folder is a finding, not a crash
        report.problems.append(f"{type(exc).__name__}: {exc}")
    report.seconds = time.perf_counter() - start
    return report


TYPE_ORDER = ["triton2triton", "torch2triton", "instruction2triton", "cuda2cuda", "torch2cuda"]


def markdown_table(tasks: list[Task], root: Path) -> str:
    """The bundled-task tables of docs/tasks.md: one per type of ``TYPE_ORDER``.

    Held-out shapes are counted, never listed; tasks of other types are left out.
    """

    def fmt(shape: dict[str, int]) -> str:
        return "{" + ", ".join(f"{k}={v}" for k, v in shape.items()) + "}"

    listed = [t for t in tasks if t.spec.type in TYPE_ORDER]
    lines: list[str] = []
    current = None
    for task in sorted(listed, key=lambda t: (TYPE_ORDER.index(t.spec.type), _key(t, root))):
        spec = task.spec
        if spec.type != current:
            current = spec.type
            lines += [
                "",
                f"### {current}",
                "",
                "| task | modelled on | dtypes | tuning shapes | held-out (GPU / CPU) |",
                "|---|---|---|---|---|",
            ]
        cpu = str(len(spec.shapes.cpu_heldout)) if "cpu" in spec.devices else "-"
        tuning = " ".join(fmt(s) for s in spec.shapes.tuning)
        lines.append(
            f"| `{_key(task, root)}` | {spec.origin} | {', '.join(spec.dtypes)} | {tuning} "
            f"| {len(spec.shapes.heldout)} / {cpu} |"
        )
    return "\n".join(lines) + "\n"


def _key(task: Task, root: Path) -> str:
    return task.path.resolve().relative_to(root.resolve()).as_posix()


def main(argv: list[str] | None = None) -> int:
    """Check the selected tasks; exit 1 when any has a problem."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("selectors", nargs="*", help="task paths relative to the root")
    parser.add_argument("--root", type=Path, default=REPO / "tasks", help="tasks root")
    parser.add_argument(
        "--markdown", action="store_true", help="print the docs/tasks.md tables instead"
    )
    parser.add_argument(
        "--device",
        default="cpu",
        help="cpu (interpreter, tiny shapes) or cuda[:N] (real kernels, GPU shapes, one seed)",
    )
    args = parser.parse_args(argv)
    if args.device != "cpu":
        # Real kernels: task modules load after this, so their @triton.jit compiles.
        os.environ.pop("TRITON_INTERPRET", None)
    tasks = select(args.root, args.selectors) if args.selectors else discover(args.root)
    if args.markdown:
        print(markdown_table(tasks, args.root), end="")
        return 0
    failed = 0
    for task in tasks:
        rep = check_task(task, args.device)
        rep.key = _key(task, args.root)
        status = "FAIL" if not rep.ok else ("SKIP-PART" if rep.skipped else "PASS")
        print(f"{status:9} {rep.key}  ({rep.trials} trials, {rep.seconds:.1f}s)")
        for line in rep.problems:
            print(f"          problem: {line}")
        for line in rep.skipped:
            print(f"          skipped: {line}")
        failed += not rep.ok
    print(f"{len(tasks) - failed}/{len(tasks)} tasks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
