"""A kernel task's checks that need no evaluator: the reference, the spec, the sources.

The deterministic half of a kernel task's validation (:mod:`aka.kinds._kernel` adds the
checks through the real evaluator; :mod:`aka.validate` records the results): the
reference is deterministic and its output depends on the seed and every input; null answers (zeros, empty, garbage, a
copy of an input, a bfloat16-rounded answer on float32) fail the tolerance; targets,
tunables and forbidden names resolve; held-out shapes exist and are unseen. The
reference-side checks follow ``tools/task_check.py``; :func:`null_answers`,
:func:`passes` and :func:`downgrade_passes` are the shared versions.
"""

from __future__ import annotations

import ast
import gc
import hashlib
import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from aka import pyast
from aka.backends import BACKENDS
from aka.eval import forbidden_uses, load_file_module
from aka.kinds._protocol import Status, TaskValidation
from aka.kinds._shared_checks import py_symbols, targets_check
from aka.tasks import Task, Tolerance, size_names
from aka.tolerance import repeats, rms

# -- reference-side checks (shared with tools/task_check.py) --------------------------------


def load_module(path: Path) -> ModuleType:
    """Import a file under a name unique to its path, so same-named files never clash."""
    digest = hashlib.blake2s(str(path.resolve()).encode(), digest_size=6).hexdigest()
    return load_file_module(path, f"_aka_validate_{path.stem}_{digest}")


def passes(out: Any, ref: Any, tol: Tolerance) -> bool:
    """Whether ``out`` is a finite tensor of ``ref``'s shape within ``tol`` (the evaluator's rule).

    Compared in float64 on ``ref``'s device: on a GPU, outputs of hundreds of millions of
    elements are compared there rather than copied to the CPU for every null answer.
    """
    import torch

    if type(out) is not torch.Tensor or tuple(out.shape) != tuple(ref.shape):
        return False
    r = ref.detach().double()
    o = out.detach().to(device=r.device, dtype=torch.float64)
    if not bool(torch.isfinite(o).all()):
        return False
    scale = rms(r) if tol.rms_atol else 0.0
    return bool(torch.allclose(o, r, atol=tol.atol_at(scale), rtol=tol.rtol))


def null_answers(inputs: tuple[Any, ...], ref: Any, seed: int) -> dict[str, Any]:
    """Outputs a cheating or broken kernel could return; each must fail the tolerance.

    Made on ``ref``'s device (the garbage drawn on the CPU, so it is the same everywhere).
    """
    import torch

    ref_d = ref.detach().double()
    g = torch.Generator().manual_seed(10_000 + seed)
    scale = float(ref_d.abs().max()) + 1.0 if ref_d.numel() else 1.0
    garbage = torch.rand(ref_d.shape, generator=g, dtype=torch.float64) * scale
    nulls = {
        "zeros": torch.zeros_like(ref_d),
        "empty": torch.empty(0, dtype=torch.float64, device=ref_d.device),
        "garbage": garbage.to(ref_d.device),
    }
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor) and x.numel() == ref_d.numel():
            nulls[f"input_copy_{i}"] = x.detach().to(ref_d.device).double().reshape(ref_d.shape)
    return nulls


BF16_ERROR = 2.0**-8
"""bfloat16's unit roundoff: the largest relative error of rounding to it (8 significant bits)."""


def downgrade_passes(ref: Any, tol: Tolerance) -> bool:
    """Whether an answer with bfloat16's precision passes ``tol``: the reference off by
    bfloat16's unit roundoff (:data:`BF16_ERROR`) everywhere.

    Rounding the reference to bfloat16 would decide by luck on small outputs: a scalar
    (a loss) that lies near a bfloat16 value is rounded by almost nothing and passes any
    tolerance, though a kernel computing it in bfloat16 would not be that close. Off by
    the unit roundoff everywhere, the verdict is the tolerance's alone, and for large
    outputs it is the rounding's (some element there is rounded by nearly that much).
    Only meaningful for real-valued outputs: integer-valued outputs (indices, codes) are
    exact in bfloat16 up to 256 and answer False.
    """
    ref_d = ref.detach().double()
    if not ref_d.is_floating_point() or bool((ref_d == ref_d.round()).all()):
        return False
    return passes(ref_d * (1 + BF16_ERROR), ref_d, tol)


def _same_inputs(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether two seeds' inputs are equal (tensors bitwise, the rest by ``==``)."""
    import torch

    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype or not torch.equal(x, y):
                return False
        elif isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor) or x != y:
            return False
    return True


def _clone(xs: tuple[Any, ...]) -> tuple[Any, ...]:
    import torch

    return tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in xs)


def reference_checks(task: Task, device: str, out: TaskValidation) -> None:
    """Determinism, seed and input dependence, null answers: in this process, on ``device``.

    On a GPU the memory these calls cached is given back afterwards: the evaluator's
    processes run next, and a validation process that kept 24 GiB cached while they did
    ran the H200 out of memory with a few tasks validated at once.
    """
    import torch

    try:
        _reference_checks(task, device, out)
    finally:
        if device != "cpu" and torch.cuda.is_initialized():
            gc.collect()
            torch.cuda.empty_cache()


def _reference_checks(task: Task, device: str, out: TaskValidation) -> None:
    spec = task.spec
    runs_here = ("cpu" if device == "cpu" else "cuda") in spec.devices
    shapes = spec.shapes.for_device(device) + spec.shapes.for_device(device, heldout=True)
    if not runs_here:  # e.g. a CUDA-only task checked on a CPU: its smallest GPU shape
        smallest = min(spec.shapes.tuning, key=lambda s: _volume(s))
        if _volume(smallest) > FOREIGN_VOLUME:
            out.add(
                "device",
                "skip",
                f"the task runs on {spec.devices} only and its smallest shape {smallest} is "
                f"too big to check on {device}: reference checks not run (validate it with "
                f"--device {spec.devices[0]})",
            )
            return
        shapes = [smallest]
    try:
        _checks_on(task, device, shapes, out)
    except (MemoryError, RuntimeError) as exc:
        # A task for another device, checked here at its smallest shape only as a courtesy:
        # inputs can be small and what the forward builds (attention over 16k tokens) not.
        if runs_here or not _out_of_memory(exc):
            raise
        out.add(
            "device",
            "skip",
            f"the task runs on {spec.devices} only and its smallest shape {shapes[0]} needs "
            f"more memory than {device} gives this check ({str(exc).splitlines()[0][:160]}): "
            f"reference checks not run (validate it with --device {spec.devices[0]})",
        )


def _out_of_memory(exc: BaseException) -> bool:
    text = str(exc).lower()
    return (
        isinstance(exc, MemoryError) or "can't allocate memory" in text or "out of memory" in text
    )


def _checks_on(task: Task, device: str, shapes: list[Any], out: TaskValidation) -> None:
    import torch

    spec = task.spec
    ref_mod = load_module(task.path / spec.reference)
    call: Callable[..., Any] = ref_mod.reference
    problems: dict[str, list[str]] = {}
    ignored_inputs: set[int] = set()
    constant: list[str] = []  # cases whose inputs differ by seed and whose output does not
    for shape in shapes:
        for dname in spec.dtypes:
            dtype, tol = getattr(torch, dname), spec.tolerances[dname]
            where = f"{shape} {dname}"
            seeds = [ref_mod.make_inputs(shape, dtype, device, s) for s in range(2)]
            kw = shape if spec.pass_shape else {}
            ref0 = call(*_clone(seeds[0]), **kw)
            if not repeats(ref0, call(*_clone(seeds[0]), **kw)):
                problems.setdefault("reference_deterministic", []).append(where)
            if repeats(ref0, call(*_clone(seeds[1]), **kw)):
                problems.setdefault("output_depends_on_seed", []).append(where)
                if not _same_inputs(seeds[0], seeds[1]):
                    constant.append(where)
            for i, x in enumerate(seeds[0]):
                if isinstance(x, torch.Tensor) and not torch.equal(x, seeds[1][i]):
                    swapped = _clone((*seeds[0][:i], seeds[1][i], *seeds[0][i + 1 :]))
                    if repeats(ref0, call(*swapped, **kw)):
                        ignored_inputs.add(i)
            for label, null in null_answers(seeds[0], ref0, 0).items():
                name = "null_input_copy" if label.startswith("input_copy") else f"null_{label}"
                if passes(null, ref0, tol):
                    problems.setdefault(name, []).append(f"{where} ({label} passes)")
                else:
                    problems.setdefault(name, [])
            if dtype == torch.float32 and downgrade_passes(ref0, tol):
                problems.setdefault("precision_downgrade", []).append(where)
    names = ["reference_deterministic", "output_depends_on_seed", "null_zeros", "null_empty"]
    names += ["null_garbage", "null_input_copy", "precision_downgrade"]
    for name in names:
        bad = problems.get(name)
        if name == "null_input_copy" and bad is None:
            out.add(name, "skip", "no input has as many elements as the output")
        elif name == "output_depends_on_seed" and bad and constant:
            out.add(
                name,
                "fail",
                f"fails on {len(bad)} case(s), e.g. {constant[0]}: the inputs differ between "
                "seeds but the output does not, so the reference ignores its inputs there",
                fix="change the problem (or its shapes) so that its output depends on its "
                "inputs; a constant answer would pass this task",
            )
        elif bad:
            out.add(name, "fail", f"fails on {len(bad)} case(s), e.g. {bad[0]}")
        else:
            out.add(name, "pass", f"{len(shapes)} shape(s) x {len(spec.dtypes)} dtype(s)")
    if ignored_inputs:
        out.add(
            "output_depends_on_inputs",
            "warn",
            f"changing input(s) {sorted(ignored_inputs)} alone never changes the output",
        )
    else:
        out.add("output_depends_on_inputs", "pass", "every tensor input changes the output")


FOREIGN_VOLUME = 1 << 24
"""The largest size product a task is reference-checked at on a device it does not list."""


def _volume(shape: dict[str, int]) -> int:
    n = 1
    for v in shape.values():
        n *= v
    return n


# -- static checks -----------------------------------------------------------------------


def static_checks(task: Task, out: TaskValidation) -> None:
    """Targets exist, tunables are constants with listed values, forbidden names resolve."""
    spec = task.spec
    src = task.path / spec.source_dir
    targets_check(task, out)
    row = BACKENDS[spec.backend]
    foreign = [d for d in spec.devices if d not in row.devices]
    if foreign:
        out.add(
            "backend_devices",
            "fail",
            f"backend {spec.backend} runs on {list(row.devices)}, not on {foreign}",
            fix=f"set devices to a subset of {list(row.devices)}",
        )
    else:
        out.add("backend_devices", "pass", f"{spec.backend} runs on {spec.devices}")
    out.add(*_tunables(task))
    local = {
        f.stem: py_symbols(f.read_text(errors="replace"))
        for f in src.glob("*.py")
        if f.name not in spec.editable
    }
    unresolved = [name for name in spec.forbidden if not _resolves(name, local)]
    if unresolved:
        out.add("forbidden_resolve", "fail", f"these forbid nothing (no such name): {unresolved}")
    else:
        out.add("forbidden_resolve", "pass" if spec.forbidden else "skip", f"{spec.forbidden}")
    out.add("heldout_shapes", *_heldout_shapes(task))
    ref_src = (task.path / spec.reference).read_text(errors="replace")
    flagged = forbidden_uses(spec.reference, ref_src, spec.forbidden)
    if not spec.forbidden:
        out.add("null_reference_call", "skip", "the task forbids nothing")
    elif flagged:
        out.add(
            "null_reference_call",
            "pass",
            f"a copy of the reference is flagged: {flagged[0].evidence()}",
        )
    else:
        out.add(
            "null_reference_call",
            "warn",
            "a copy of the reference uses none of the forbidden names; a candidate could submit it",
        )


def _tunables(task: Task) -> tuple[str, Status, str]:
    entry = task.path / task.spec.source_dir / task.spec.entry_file
    if not task.spec.tunables:
        return "tunables", "skip", "no tunables"
    consts: dict[str, object] = {}
    for node in pyast.parse(entry.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            consts.update((t.id, node.value.value) for t in node.targets if isinstance(t, ast.Name))
    bad = []
    for name, values in task.spec.tunables.items():
        value = consts.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value not in values:
            bad.append(f"{name}={value!r} (allowed {values})")
    if bad:
        return "tunables", "fail", f"not a module-level int among the listed values: {bad}"
    return "tunables", "pass", f"{sorted(task.spec.tunables)}"


def _resolves(dotted: str, local: dict[str, set[str]]) -> bool:
    """Whether a dotted name names a module or an attribute of one.

    ``local`` maps the task's own non-editable modules to their top-level symbols (a
    task may forbid ``problem.Model``, which is importable only beside the candidate).
    """
    parts = dotted.split(".")
    if parts[0] in local:
        return len(parts) == 1 or parts[1] in local[parts[0]]
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        except Exception:
            return True  # importable but broken here (e.g. needs a GPU): not a typo
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def _heldout_shapes(task: Task) -> tuple[Status, str]:
    """Held-out shapes exist for every device the task runs on, unseen, with the same names."""
    problems, counts = [], []
    for dev in task.spec.devices:
        tuning = task.spec.shapes.for_device(dev)
        held = task.spec.shapes.for_device(dev, heldout=True)
        field_name = "shapes.cpu_heldout" if dev == "cpu" else "shapes.heldout"
        keys = {size_names(s) for s in tuning}
        if not held:
            problems.append(f"{field_name} is empty")
        elif odd := [s for s in held if size_names(s) not in keys]:
            problems.append(f"{field_name} {odd} use other size names than the tuning shapes")
        elif seen := [s for s in held if s in tuning]:
            problems.append(f"{field_name} {seen} are also tuning shapes (agents see them)")
        elif any(v <= 0 for s in held for v in s.values()):
            problems.append(f"{field_name} sizes must be positive")
        counts.append(f"{dev}: {len(held)}")
    if problems:
        return "fail", "; ".join(problems)
    return "pass", f"held-out shapes ({', '.join(counts)}), none among the tuning shapes"
