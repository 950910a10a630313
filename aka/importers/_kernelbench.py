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

This module walks the files and imports each one; the problem file's reader is
:mod:`aka.importers._kb_problem`, the decision from what the probe found
:mod:`aka.importers._kb_plan`, and the writer of the task :mod:`aka.importers._kb_writer`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from aka.childjson import run_module
from aka.errors import InputError
from aka.importers._common import ImportResult, Outcome, prepare, slug, unique_names
from aka.importers._kb_plan import (
    FIX_RANDOM,
    FIX_SIZES,
    HALF,
    NETWORK_ERRORS,
    Plan,
    plan,
    precision_note,
    refusal_fix,
    widened_note,
)
from aka.importers._kb_probe import GPU_ELEMENTS, MARK
from aka.importers._kb_problem import ALLOCATORS, Problem, decode, read_problem
from aka.importers._kb_writer import KINDS, write_task

# The names this module held before its reader, plan and writer moved out stay
# importable from it, where the package and the tests import them.
__all__ = [
    "ALLOCATORS",
    "FIX_RANDOM",
    "FIX_SIZES",
    "HALF",
    "KINDS",
    "NETWORK_ERRORS",
    "OFFLINE",
    "PROBE_MEMORY_MB",
    "PROBE_TIMEOUT_S",
    "Plan",
    "Problem",
    "decode",
    "import_kernelbench",
    "import_one",
    "plan",
    "precision_note",
    "probe",
    "problem_files",
    "read_problem",
    "refusal_fix",
    "widened_note",
    "write_task",
]

PROBE_TIMEOUT_S = 300.0
"""A problem whose reading (meta analysis and the CPU run) takes longer is refused or GPU-only."""
PROBE_MEMORY_MB = 4096
"""The reading process's data limit: a CPU shape that needs more fails there, not here."""


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
