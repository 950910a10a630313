"""What the input tests of bundled tasks share: a task's reference module, its cases on the
CPU, and the check an output must pass (finite, within the task's tolerance)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import yaml

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def reference_module(task: str) -> ModuleType:
    """The task's ``reference.py``, loaded from its file."""
    spec = importlib.util.spec_from_file_location(f"_ref_{task.replace('/', '_')}",
                                                  TASKS / task / "reference.py")  # fmt: skip
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cases(task: str) -> tuple[dict[str, Any], list[tuple[dict[str, int], str, dict[str, float]]]]:
    """The task's spec, and (shape, dtype, tolerance) for its CPU shapes (held-out ones
    included) and dtypes; a GPU-only task's smallest shape stands in for them."""
    spec = yaml.safe_load((TASKS / task / "task.yaml").read_text())
    shapes = spec["shapes"].get("cpu", []) + spec["shapes"].get("cpu_heldout", [])
    if not shapes:
        every = spec["shapes"]["tuning"] + spec["shapes"]["heldout"]
        shapes = [min(every, key=lambda s: math.prod(s.values()))]
    return spec, [(shape, dtype, spec["tolerances"][dtype])
                  for shape in shapes for dtype in spec["dtypes"]]  # fmt: skip


def close(got: Any, want: Any, tol: dict[str, float]) -> bool:
    """Finite and within the tolerance, as the checker judges an output."""
    got = got.double()
    return bool(torch.isfinite(got).all()) and torch.allclose(got, want.double(), **tol)
