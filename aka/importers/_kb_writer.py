"""The writer of an imported KernelBench task: its files and its task.yaml.

The problem file is kept verbatim twice (beside the reference, and as the candidate's
non-editable ``source/problem.py``), the reference, the loader and the starting code
come from :mod:`aka.importers._templates`, and the spec records what the plan decided
(shapes, devices, widened and stressed inputs) with what the candidate may not call.
"""

from __future__ import annotations

from pathlib import Path

from aka.importers._common import origin, write_spec
from aka.importers._kb_cpu import TOLERANCE
from aka.importers._kb_plan import Plan, stress_note, widened_note
from aka.importers._kb_problem import Problem
from aka.importers._kb_stress import CASES as STRESS_CASES
from aka.importers._templates import KERNELBENCH_ENTRY, KERNELBENCH_LOADER, KERNELBENCH_REFERENCE

KINDS = {"torch2triton": "triton", "torch2cuda": "cuda"}


def write_task(problem: Problem, dest: Path, *, kind: str, name: str, plan: Plan) -> None:
    """Write one task folder from a parsed problem and its shape plan."""
    assert plan.shapes is not None
    backend = KINDS[kind]
    (dest / "source").mkdir(parents=True, exist_ok=True)
    (dest / "problem.py").write_bytes(problem.raw)
    (dest / "source" / "problem.py").write_bytes(problem.raw)
    (dest / "source" / "kb_loader.py").write_text(KERNELBENCH_LOADER)
    ranges = {i: (lo, hi) for i, lo, hi in plan.widened}
    reference = KERNELBENCH_REFERENCE.replace("INPUT_RANGES = {}", f"INPUT_RANGES = {ranges!r}", 1)
    stress = dict(plan.stress)
    for case in STRESS_CASES:
        values = dict(stress.get(case.name, ()))
        reference = reference.replace(f"{case.table} = {{}}", f"{case.table} = {values!r}", 1)
    (dest / "reference.py").write_text(reference)
    imports = "\n".join(problem.imports)
    if "import torch\n" not in f"{imports}\n":
        imports = f"import torch\n{imports}"
    (dest / "source" / "model_new.py").write_text(
        KERNELBENCH_ENTRY.format(
            kind=kind,
            name=name,
            backend=backend.capitalize() if backend == "triton" else "CUDA",
            imports=imports,
            body=problem.body,
        )
    )
    note = stress_note(plan.stress)
    what = "Triton kernels" if backend == "triton" else "CUDA kernels (torch.utils.cpp_extension)"
    spec = {
        "name": name,
        "type": kind,
        "origin": origin(problem.path, "kernelbench"),
        "instructions": (
            f"`ModelNew` in model_new.py is the KernelBench problem `{problem.path.name}` "
            f"written in PyTorch. Make it faster by replacing its computation with {what}, "
            "keeping its parameters and its outputs (within tolerance) for any sizes. The torch "
            "functions listed as forbidden, and the original Model, may not be called."
            + (f" Unlike upstream, it draws {widened_note(plan.widened)}." if plan.widened else "")
            + (f" The {note}: keep kernels numerically stable." if note else "")
            + (f" The problem file's {plan.precision}." if plan.precision else "")
        ),
        "backend": backend,
        "editable": ["model_new.py"],
        "entry": "model_new.py:kernelbench_entry",
        "targets": ["ModelNew"],
        "pass_shape": True,
        "dtypes": ["float32"],
        "tolerances": {"float32": dict(TOLERANCE)},
        "shapes": plan.shapes,
        "seeds": 3,
        "devices": list(plan.devices),
        "forbidden": [*sorted({*problem.forward_calls, *plan.module_calls}), "problem.Model"],
        "requires": ["triton"] if backend == "triton" else ["torch.utils.cpp_extension"],
    }
    write_spec(dest, spec)
