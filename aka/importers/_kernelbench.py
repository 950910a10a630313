"""KernelBench problem files become torch2triton or torch2cuda tasks.

A KernelBench problem is one Python file: ``class Model(nn.Module)``, module-level
integer sizes, ``get_inputs()`` and ``get_init_inputs()``; a solution defines ``class
ModelNew``. The imported task keeps the file verbatim twice: as ``problem.py`` beside
the reference (the ground truth: Model run in float64 with weights from a fixed seed)
and as the non-editable ``source/problem.py`` the candidate imports its sizes and init
inputs from. The editable ``source/model_new.py`` starts as a copy of ``Model`` named
``ModelNew`` plus ``kernelbench_entry`` (how the evaluator calls it). The module-level
sizes become the shape: tuning shapes are the file's sizes, held-out and CPU shapes are
derived from them (and the CPU ones tried on the reference at import). The torch
functions ``Model.forward`` calls, and the original ``Model``, are forbidden to the
candidate.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from aka.errors import InputError
from aka.importers._common import origin, prepare, slug, write_spec
from aka.importers._templates import KERNELBENCH_ENTRY, KERNELBENCH_REFERENCE
from aka.pyast import dotted_name, import_aliases, resolve

KINDS = {"torch2triton": "triton", "torch2cuda": "cuda"}
ALLOCATORS = {
    "empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "arange", "tensor", "as_tensor", "Size", "device", "no_grad", "float32", "float16",
    "bfloat16", "float64", "int64", "int32", "bool", "finfo", "iinfo",
}  # fmt: skip
"""torch functions that allocate or describe rather than compute: never forbidden."""


@dataclass(frozen=True)
class Problem:
    """What the importer read from one problem file."""

    path: Path
    source: str
    model_source: str
    sizes: dict[str, int]
    forward_calls: list[str]
    imports: list[str]


@dataclass
class ImportResult:
    """Task folders written, and files left out with the reason."""

    written: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _forward_calls(model: ast.ClassDef, aliases: dict[str, str]) -> list[str]:
    """Dotted torch functions called in ``Model.forward`` (aliases resolved)."""
    found: set[str] = set()
    for fn in model.body:
        if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and (name := dotted_name(node.func)):
                    full = resolve(name, aliases)
                    if full.startswith("torch.") and full.rsplit(".", 1)[1] not in ALLOCATORS:
                        found.add(full)
    return sorted(found)


def read_problem(path: Path) -> Problem:
    """Parse a problem file.

    Raises:
        InputError: unreadable, not Python, or missing ``class Model``, ``get_inputs``
            or ``get_init_inputs``; the message names the file, the field and the fix.
    """
    try:
        source = path.read_text()
        tree = ast.parse(source, filename=str(path))
    except OSError as exc:
        raise InputError(
            f"cannot read: {exc}", where=str(path), fix="pass a readable file"
        ) from None
    except SyntaxError as exc:
        raise InputError(
            f"not valid Python: {exc.msg}", where=f"{path}:{exc.lineno}", fix="fix the syntax"
        ) from None
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    if "Model" not in classes:
        hint = " (this looks like a solution: it defines ModelNew)" if "ModelNew" in classes else ""
        raise InputError(
            f"field 'class Model': not defined{hint}",
            where=str(path),
            fix="a KernelBench problem defines `class Model(nn.Module)` with a forward()",
        )
    for name, what in [
        ("get_inputs", "the forward inputs"),
        ("get_init_inputs", "Model's constructor arguments"),
    ]:
        if name not in funcs:
            raise InputError(
                f"field '{name}': function not defined",
                where=str(path),
                fix=f"define {name}() returning a list of {what} (KernelBench format)",
            )
    sizes: dict[str, int] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and type(node.value.value) is int
        ):
            sizes[node.targets[0].id] = node.value.value
    imports = [
        ast.get_source_segment(source, n) or ""
        for n in tree.body
        if isinstance(n, ast.Import | ast.ImportFrom)
    ]
    model = classes["Model"]
    return Problem(
        path=path,
        source=source,
        model_source=ast.get_source_segment(source, model) or "",
        sizes=sizes,
        forward_calls=_forward_calls(model, import_aliases(tree)),
        imports=imports,
    )


def heldout_size(v: int) -> int:
    """A nearby size no tuning shape has: about 1/8 larger and odd (small sizes kept)."""
    return v if v < 8 else (v + max(1, v // 8)) | 1


def cpu_size(v: int) -> int:
    """A size small enough for the CPU: divided by 4 until at most 64."""
    while v > 64:
        v //= 4
    return v


def derive_shapes(sizes: dict[str, int]) -> dict[str, list[dict[str, int]]]:
    """Tuning, held-out and CPU shapes from the problem's sizes."""
    held = {k: heldout_size(v) for k, v in sizes.items()}
    cpu = {k: cpu_size(v) for k, v in sizes.items()}
    cpu_held = {k: v + 1 if v >= 4 else v for k, v in cpu.items()}
    shapes: dict[str, list[dict[str, int]]] = {"tuning": [sizes]}
    if held != sizes:
        shapes["heldout"] = [held]
    shapes["cpu"] = [cpu]
    if cpu_held != cpu:
        shapes["cpu_heldout"] = [cpu_held]
    return shapes


def _model_new(problem: Problem) -> str:
    import re

    return re.sub(r"\bModel\b", "ModelNew", problem.model_source)


def _try_cpu(dest: Path, shapes: list[dict[str, int]]) -> str | None:
    """Run the written reference on the CPU shapes; the error, or None when it works."""
    import hashlib
    import importlib.util
    import sys

    path = dest / "reference.py"
    name = "_aka_kb_check_" + hashlib.blake2s(str(path).encode(), digest_size=6).hexdigest()
    try:
        import torch

        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for shape in shapes:
            module.reference(*module.make_inputs(shape, torch.float32, "cpu", 0), **shape)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        sys.modules.pop(name, None)
    return None


def write_task(problem: Problem, dest: Path, *, kind: str, name: str) -> list[str]:
    """Write one task folder from a parsed problem; returns notes for the user."""
    backend = KINDS[kind]
    notes: list[str] = []
    (dest / "source").mkdir(parents=True, exist_ok=True)
    (dest / "problem.py").write_text(problem.source)
    (dest / "source" / "problem.py").write_text(problem.source)
    (dest / "reference.py").write_text(KERNELBENCH_REFERENCE.format(name=name))
    imports = "\n".join(problem.imports)
    if "import torch\n" not in f"{imports}\n":
        imports = f"import torch\n{imports}"
    (dest / "source" / "model_new.py").write_text(
        KERNELBENCH_ENTRY.format(
            kind=kind,
            name=name,
            backend=backend.capitalize() if backend == "triton" else "CUDA",
            imports=imports,
            model_new=_model_new(problem),
        )
    )
    shapes = derive_shapes(problem.sizes)
    devices = ["cuda"]
    if backend == "triton":
        error = _try_cpu(dest, shapes["cpu"] + shapes.get("cpu_heldout", []))
        if error is None:
            devices.append("cpu")
        else:
            notes.append(f"{name}: CPU shapes dropped (the reference failed on them: {error})")
            shapes.pop("cpu", None)
            shapes.pop("cpu_heldout", None)
    if "heldout" not in shapes:
        notes.append(f"{name}: no held-out shape could be derived from sizes {problem.sizes}")
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
        ),
        "backend": backend,
        "editable": ["model_new.py"],
        "entry": "model_new.py:kernelbench_entry",
        "targets": ["ModelNew"],
        "pass_shape": True,
        "dtypes": ["float32"],
        "tolerances": {"float32": {"atol": 1.0e-4, "rtol": 1.0e-4}},
        "shapes": shapes,
        "seeds": 3,
        "devices": devices,
        "forbidden": [*problem.forward_calls, "problem.Model"],
        "requires": ["triton"] if backend == "triton" else ["torch.utils.cpp_extension"],
    }
    write_spec(dest, spec)
    return notes


def import_kernelbench(
    path: Path,
    root: Path,
    *,
    kind: str = "torch2triton",
    suite: str = "kernelbench",
    force: bool = False,
) -> ImportResult:
    """Import one problem file, or every problem file under a folder.

    A single file that is not a problem raises; in a folder, solution files (``ModelNew``
    only) and broken files are skipped with the reason.

    Raises:
        InputError: unknown ``kind``, a missing path, or a broken single file.
    """
    if kind not in KINDS:
        raise InputError(
            f"unknown task type {kind!r}", where="--type", fix=f"use one of {sorted(KINDS)}"
        )
    if not path.exists():
        raise InputError(
            "no such file or folder",
            where=str(path),
            fix="pass a KernelBench problem file or folder",
        )
    files = [path] if path.is_file() else sorted(path.rglob("*.py"))
    result = ImportResult()
    for file in files:
        try:
            problem = read_problem(file)
        except InputError as exc:
            if path.is_file():
                raise
            result.skipped.append((file, exc.message))
            continue
        name = slug(file.stem)
        dest = root / kind / suite / name
        prepare(dest, force=force)
        result.notes += write_task(problem, dest, kind=kind, name=name)
        result.written.append(dest)
    return result
