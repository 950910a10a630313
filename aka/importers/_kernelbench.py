"""KernelBench problem files become torch2triton or torch2cuda tasks.

A KernelBench problem is one Python file: ``class Model(nn.Module)``, module-level
sizes, ``get_inputs()`` and ``get_init_inputs()``; a solution defines ``class
ModelNew``. The imported task keeps the file verbatim twice: as ``problem.py`` beside
the reference (the ground truth: Model run in float64 with weights from a fixed seed)
and as the non-editable ``source/problem.py`` the candidate's sizes and init inputs
come from, through ``source/kb_loader.py``, which reruns the file with a shape's sizes
so derived values follow. The editable ``source/model_new.py`` starts as a copy of the
problem (Model renamed ``ModelNew``, with its helpers) plus ``kernelbench_entry`` (how
the evaluator calls it).

Shapes come from running the problem in a child process on the meta device
(:mod:`aka.importers._kb_probe`): the sizes that move a tensor dimension are scaled,
nothing else. A problem whose shapes cannot be made small enough for the CPU, or whose
reference fails there, is imported GPU-only; one with no scalable size or no held-out
shape that runs is refused. Every file gets one line saying which, and why. The torch
functions ``Model.forward`` calls, those the torch modules Model holds stand for
(:mod:`aka.importers._kb_modules`), and the original ``Model``, are forbidden to the
candidate.
"""

from __future__ import annotations

import ast
import codecs
import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from aka.childjson import run_module
from aka.errors import InputError
from aka.importers._common import (
    ImportResult,
    Outcome,
    Status,
    origin,
    prepare,
    slug,
    unique_names,
    write_spec,
)
from aka.importers._kb_probe import (
    GPU_ELEMENTS,
    MARK,
    RANDOM_FORWARD,
    SEVERAL_OUTPUTS,
    TOLERANCE,
)
from aka.importers._templates import KERNELBENCH_ENTRY, KERNELBENCH_LOADER, KERNELBENCH_REFERENCE
from aka.pyast import dotted_name, import_aliases, resolve

PROBE_TIMEOUT_S = 300.0
"""A problem whose reading (meta analysis and the CPU run) takes longer is refused or GPU-only."""
PROBE_MEMORY_MB = 4096
"""The reading process's data limit: a CPU shape that needs more fails there, not here."""
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
    """The file's text, decoded as Python decodes it (:func:`decode`)."""
    raw: bytes
    """The file's bytes, which the task's ``problem.py`` keeps (a declared encoding then
    still matches what it declares), less a UTF-8 BOM: Python skips it, and readers that
    take the file as UTF-8 text saw a stray U+FEFF."""
    body: str
    """The file without its imports, get_inputs, get_init_inputs and __main__ block."""
    forward_calls: list[str]
    """The torch functions the forwards of the file's classes call."""
    imports: list[str]


def _forward_calls(classes: list[ast.ClassDef], aliases: dict[str, str]) -> list[str]:
    """Dotted torch functions called in the ``forward`` of ``classes`` (aliases resolved):
    Model's, and those of the modules of the file it is built from (level 3's
    ``CausalSelfAttention`` holds the softmax its Model computes)."""
    found: set[str] = set()
    for fn in (f for cls in classes for f in cls.body):
        if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and (name := dotted_name(node.func)):
                    full = resolve(name, aliases)
                    if full.startswith("torch.") and full.rsplit(".", 1)[1] not in ALLOCATORS:
                        found.add(full)
    return sorted(found)


def decode(raw: bytes, path: Path) -> str:
    """The file's text as Python reads it: UTF-8, a UTF-8 BOM, or the encoding its first
    lines declare (``# -*- coding: latin-1 -*-``), which the task's loader honours too.

    Raises:
        InputError: bytes Python would refuse (a Latin-1 comment with no declaration).
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        return raw.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise InputError(
            f"not UTF-8 and no other encoding declared, so Python cannot run it ({reason})",
            where=str(path),
            fix="save the file as UTF-8, or declare its encoding on its first line "
            "(# -*- coding: latin-1 -*-)",
        ) from None


def read_problem(path: Path) -> Problem:
    """Parse a problem file.

    Raises:
        InputError: unreadable, not Python, or missing ``class Model``, ``get_inputs``
            or ``get_init_inputs``; the message names the file, the field and the fix.
    """
    try:
        raw = path.read_bytes().removeprefix(codecs.BOM_UTF8)
        source = decode(raw, path)
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
    imports = [
        ast.get_source_segment(source, n) or ""
        for n in tree.body
        if isinstance(n, ast.Import | ast.ImportFrom)
    ]
    return Problem(
        path=path,
        source=source,
        raw=raw,
        body=_body(source, tree),
        forward_calls=_forward_calls(list(classes.values()), import_aliases(tree)),
        imports=imports,
    )


def _body(source: str, tree: ast.Module) -> str:
    """What ModelNew needs from the file (helpers, and the module-level values they read,
    directly or through other values), Model renamed.

    Values only get_inputs() and get_init_inputs() read are left out: the starting code is
    the candidate's, judged by the candidate's rules, and a size read from the
    environment there (``int(os.environ.get("BATCH", 16))``) failed the baseline.
    """
    nodes = [
        node for node in tree.body
        if not isinstance(node, ast.Import | ast.ImportFrom)
        and not (isinstance(node, ast.FunctionDef) and node.name in ("get_inputs", "get_init_inputs"))
        and not (isinstance(node, ast.If) and "__main__" in ast.dump(node.test))
    ]  # fmt: skip
    values = [n for n in nodes if isinstance(n, ast.Assign | ast.AnnAssign | ast.AugAssign)]
    used = {name for n in nodes if n not in values for name in _reads(n)}
    kept: list[ast.stmt] = []
    while grown := [n for n in values if n not in kept and _binds(n) & used]:
        kept += grown
        used |= {name for n in grown for name in _reads(n)}
    keep = [ast.get_source_segment(source, n, padded=True) or "" for n in nodes
            if n not in values or n in kept]  # fmt: skip
    return re.sub(r"\bModel\b", "ModelNew", "\n\n\n".join(keep))


def _reads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _binds(node: ast.stmt) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def probe(
    path: Path, *, timeout_s: float = PROBE_TIMEOUT_S, upstream_sizes: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run :mod:`aka.importers._kb_probe` on ``path`` in a child process.

    Returns the analysis and the CPU run (each ``{"error": ...}`` when that part failed
    or did not finish); the problem's own code never runs in this process.
    ``upstream_sizes`` keeps the file's sizes as the tuning shape however large.
    """
    request = {
        "path": str(path.resolve()),
        "gpu_elements": None if upstream_sizes else GPU_ELEMENTS,
    }
    res = run_module(
        "aka.importers._kb_probe", request, mark=MARK,
        timeout_s=timeout_s, memory_bytes=PROBE_MEMORY_MB << 20, env=OFFLINE,
    )  # fmt: skip
    docs = res.docs
    tail = f"stopped after {timeout_s:.0f} s" if res.code is None else res.last_error_line()[:300]
    if res.code is not None and res.code < 0:
        tail = f"killed by signal {-res.code} (over {PROBE_MEMORY_MB} MB?)"
    analysis = docs[0] if docs else {"error": f"the reading process failed: {tail}"}
    cpu = docs[1] if len(docs) > 1 else {"error": f"the CPU run did not finish: {tail}"}
    return analysis, cpu


OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
"""A problem is read without the network, as it is evaluated: a file that fetches its
model (KernelBench level 4's ``from_pretrained``) works from the local cache or is
refused at once, instead of after the hub's connection time-outs."""
NETWORK_ERRORS = ("huggingface", "offline mode", "couldn't connect", "connection",
                  "name resolution", "network is unreachable", "urlopen")  # fmt: skip


def refusal_fix(error: str, beside: Path | None = None) -> str:
    """The fix for a problem that does not run, from what went wrong (``beside``: the
    problem's folder, where a module it imports may sit)."""
    missing = re.search(r"No module named '([\w.]+)'", error)
    if missing:
        top = missing.group(1).split(".")[0]
        sibling = _sibling(beside, top)
        if sibling is not None:
            return (
                f"inline {sibling.name} (beside the problem) into the problem file: a task "
                "holds the problem file alone, and its processes import nothing from the "
                "folder it came from"
            )
        return (
            f"install {top} where aka runs (pip install {top}): the evaluation processes "
            "import the problem file too"
        )
    if SEVERAL_OUTPUTS.split(" (")[0] in error:
        return (
            "return one tensor from forward (the output to check; a second one is a task "
            "of its own, or torch.cat them if they are one result)"
        )
    if re.search(r"get_(init_)?inputs\(\) returned a \w+, not a list", error):
        return (
            "return a list of the forward's inputs from get_inputs() (return [x, y]) and a "
            "list of Model's arguments from get_init_inputs(), as KernelBench problems do"
        )
    if any(w in error.lower() for w in NETWORK_ERRORS):
        return (
            "the problem fetches files from the network (the Hugging Face Hub) as it is "
            "built, and aka reads problems offline so that a task never depends on what a "
            "server returns: download them once into the local cache (`huggingface-cli "
            "download MODEL`, or run the file once with the network), then import again"
        )
    return (
        "the file must import and build its inputs with only torch installed; "
        "run it with `python FILE` to see the error"
    )


@dataclass(frozen=True)
class Plan:
    """Shapes and devices for one problem, and the line that says so."""

    status: Status
    detail: str
    fix: str = ""
    shapes: dict[str, list[dict[str, int]]] | None = None
    devices: tuple[str, ...] = ("cuda",)
    widened: tuple[tuple[int, float, float], ...] = ()
    """(input, low, high): inputs drawn from [low, high) instead of upstream's [0, 1)
    (:func:`aka.importers._kb_probe.widened_inputs`)."""
    precision: str = ""
    """:func:`precision_note`, when the file draws half-precision inputs."""
    module_calls: tuple[str, ...] = ()
    """The torch functions the modules Model holds stand for (``self.conv(x)`` runs
    ``torch.convolution``): forbidden beside those forward's source names."""


FIX_RANDOM = (
    "draw the random tensors in get_inputs() (or once in __init__, under the weight seed) "
    "and pass them to forward"
)
FIX_SIZES = (
    "give each size a module-level name (batch_size = 128) that get_inputs() and "
    "get_init_inputs() use, so it can be scaled"
)


def _sibling(folder: Path | None, module: str) -> Path | None:
    """The module ``module`` as a file or package in ``folder``, if it is there."""
    if folder is None:
        return None
    for found in (folder / f"{module}.py", folder / module / "__init__.py"):
        if found.is_file():
            return found if found.name != "__init__.py" else found.parent
    return None


def plan(
    analysis: dict[str, Any], cpu_run: dict[str, Any], *, cpu_possible: bool,
    beside: Path | None = None,
) -> Plan:  # fmt: skip
    """Decide the task's shapes from what the problem built (pure: tested on its own),
    with the torch functions its modules stand for (``beside``: the problem's folder,
    for the fix of a refusal)."""
    if "error" in analysis:
        error = str(analysis["error"])
        return Plan("refused", error, refusal_fix(error, beside))
    decided = _shapes_plan(analysis, cpu_run, cpu_possible=cpu_possible)
    return replace(
        decided, module_calls=tuple(analysis.get("module_calls", ())),
        precision=precision_note(analysis),
    )  # fmt: skip


def _shapes_plan(analysis: dict[str, Any], cpu_run: dict[str, Any], *, cpu_possible: bool) -> Plan:
    """:func:`plan` for a problem that ran."""
    movers: dict[str, int] = analysis.get("tuning", analysis["movers"])
    kept = "; ".join(f"{k}: {why}" for k, why in analysis.get("kept", {}).items())
    if not movers:
        why = f"no module-level size moves a tensor dimension (sizes {analysis['sizes']})"
        return Plan("refused", why + (f"; {kept}" if kept else ""), FIX_SIZES)
    if not analysis.get("heldout"):
        return Plan(
            "refused", f"no held-out shape near {movers} builds the problem",
            "make Model accept sizes other than the file's (e.g. odd or 1/8 larger)",
        )  # fmt: skip
    shapes: dict[str, list[dict[str, int]]] = {
        "tuning": [movers], "heldout": [analysis["heldout"]],
    }  # fmt: skip
    scaled = (
        f" (upstream {analysis['upstream']}, {analysis['upstream_elements']:,} elements, "
        f"scaled to at most {GPU_ELEMENTS:,}; --upstream-sizes keeps them)"
        if analysis.get("upstream")
        else ""
    )
    detail = f"tuning {movers}{scaled}; held-out {analysis['heldout']}"
    if note := precision_note(analysis):
        detail += f"; {note}"
    widened = tuple((int(i), float(lo), float(hi)) for i, lo, hi in cpu_run.get("widened", ()))
    if widened:
        detail += f"; {widened_note(widened)}"
    if not cpu_possible:
        return Plan("imported", detail, shapes=shapes, widened=widened)
    cpu, cpu_held = analysis.get("cpu"), analysis.get("cpu_heldout")
    if not cpu or not cpu_held:
        why = "no CPU shape small enough builds the problem" if not cpu else (
            f"no CPU held-out shape near {cpu} builds the problem"
        )  # fmt: skip
        return Plan("imported GPU-only", why, FIX_SIZES, shapes=shapes)
    if RANDOM_FORWARD in cpu_run.get("error", ""):  # no device makes it checkable
        return Plan("refused", cpu_run["error"], FIX_RANDOM)
    if "error" in cpu_run:
        why = f"the reference fails on the CPU shapes {cpu}, {cpu_held}: {cpu_run['error']}"
        return Plan("imported GPU-only", why, "", shapes=shapes)
    shapes |= {"cpu": [cpu], "cpu_heldout": [cpu_held]}
    passed = analysis.get("cpu_degenerate")
    over = f" (not {passed}, where the output does not depend on the inputs)" if passed else ""
    return Plan(
        "imported", f"{detail}; cpu {cpu}{over}", shapes=shapes, devices=("cuda", "cpu"),
        widened=widened,
    )  # fmt: skip


HALF = ("float16", "bfloat16")


def precision_note(analysis: dict[str, Any]) -> str:
    """What the import line and the instructions say when get_inputs() draws half
    precision: the task casts its inputs to float32 (the reference runs in float64) and
    checks at float32's tolerance, so a kernel written for the file's dtype is judged in
    float32."""
    half = [d for d in analysis.get("input_dtypes", ()) if d in HALF]
    if not half:
        return ""
    return (
        f"get_inputs() draws {' and '.join(half)} inputs: the task checks float32 (inputs "
        "cast to float32, the reference in float64, float32's tolerance)"
    )


def widened_note(widened: tuple[tuple[int, float, float], ...]) -> str:
    """What widening did, in the words of the import line and the task's instructions."""
    which = ", ".join(f"input {i} from [{lo:g}, {hi:g})" for i, lo, hi in widened)
    return (
        f"get_inputs()'s {which} (x -> low + (high - low) * x): upstream's torch.rand values "
        "lie in [0, 1), where returning the input is a correct answer"
    )


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


def import_one(
    file: Path,
    root: Path,
    *,
    kind: str,
    suite: str,
    force: bool,
    upstream_sizes: bool = False,
    name: str | None = None,
) -> Outcome:
    """Read, probe and write one problem file; the outcome says which and why (``name``:
    the task's, by default the file's; :func:`unique_names` when several).

    Raises:
        InputError: the file is not a KernelBench problem, or the task folder exists.
    """
    problem = read_problem(file)
    name = name or slug(file.stem)
    dest = root / kind / suite / name
    if dest.exists() and not force:
        prepare(dest, force=force)  # raises, naming --force
    analysis, cpu_run = probe(file, upstream_sizes=upstream_sizes)
    decided = plan(analysis, cpu_run, cpu_possible=KINDS[kind] == "triton", beside=file.parent)
    if decided.status == "refused":
        return Outcome(file, "refused", decided.detail, decided.fix)
    prepare(dest, force=force)
    write_task(problem, dest, kind=kind, name=name, plan=decided)
    return Outcome(file, decided.status, decided.detail, decided.fix, dest=dest)


def problem_files(folder: Path) -> list[Path]:
    """The ``.py`` files under ``folder``, outside hidden folders (``.ipynb_checkpoints``
    holds a notebook's copies of the problems beside it, ``.git`` a repository's
    internals) and ``__pycache__``: each would be imported again as a task of its own."""
    return sorted(
        p for p in folder.rglob("*.py")
        if not any(part.startswith(".") or part == "__pycache__"
                   for part in p.relative_to(folder).parts[:-1])
    )  # fmt: skip


def import_kernelbench(
    path: Path,
    root: Path,
    *,
    kind: str = "torch2triton",
    suite: str = "kernelbench",
    force: bool = False,
    upstream_sizes: bool = False,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> ImportResult:
    """Import one problem file, or every problem file under a folder.

    A problem whose tensors at the file's sizes hold more than
    :data:`~aka.importers._kb_probe.GPU_ELEMENTS` elements in all is tuned at sizes
    shrunk to fit (said on its line); ``upstream_sizes`` keeps the file's.

    A single file that is not a problem raises; in a folder, solution files (``ModelNew``
    only) and broken files are refused with the reason. Problems that are read but
    cannot be scaled are refused in either case (an outcome, not an exception).

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
    files = [path] if path.is_file() else problem_files(path)
    if not files:
        raise InputError(
            "no .py files found under this folder (hidden folders and __pycache__ are skipped)",
            where=str(path),
            fix="pass a KernelBench problem file, or a folder holding them (level1/)",
        )
    names = unique_names(files, path, lambda p: p.stem)
    result = ImportResult(on_outcome=on_outcome)
    for file in files:
        try:
            result.add(
                import_one(file, root, kind=kind, suite=suite, force=force,
                           upstream_sizes=upstream_sizes, name=names[file])
            )  # fmt: skip
        except InputError as exc:
            if path.is_file():
                raise
            result.add(Outcome(file, "refused", exc.message, exc.fix or ""))
    return result
