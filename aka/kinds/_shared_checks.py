"""Validation checks that every kind shares: targets, and the baseline through the evaluator.

The symbols a task asks the agent to optimize must exist in its editable files. The
starting sources, submitted as a candidate of the staged task, must pass (a task
whose own baseline fails can reward nothing), and timed against themselves (A/A) the
geometric-mean speedup must stay within a noise band, or every speedup on the task is
noise.
"""

from __future__ import annotations

import ast
import math
import re

from aka import events as ev
from aka import pyast
from aka.kinds._protocol import CheckContext, Status, TaskValidation
from aka.kinds._registry import baseline_tree
from aka.tasks import Task

__all__ = ["AA_BAND", "aa_noise", "baseline_checks", "py_symbols", "targets_check"]

AA_BAND = {"cuda": 0.05, "cpu": 0.5}
"""A/A timing band: the baseline against itself must land within 1 ± band (geomean)."""


def aa_noise(ctx: CheckContext, eval_id: str) -> tuple[Status, str]:
    """The baseline timed against itself: its geomean speedup must be within the band."""
    shapes = [
        s
        for e in ctx.ledger.events(run_id=ctx.run_id, types=["KernelTimed"])
        if isinstance(e.payload, ev.KernelTimed) and e.payload.eval_id == eval_id
        for s in e.payload.shapes
    ]
    if not shapes:
        return "skip", "no timing recorded"
    geo = math.exp(sum(math.log(s.speedup) for s in shapes) / len(shapes))
    band = AA_BAND["cpu" if ctx.device == "cpu" else "cuda"]
    covered = sum(s.speedup_ci[0] <= 1.0 <= s.speedup_ci[1] for s in shapes)
    detail = (
        f"A/A speedup {geo:.3f} (band 1±{band}); CI covers 1 on {covered}/{len(shapes)} shape(s)"
    )
    if abs(math.log(geo)) <= math.log(1 + band):
        return "pass", detail
    return ("warn" if ctx.device == "cpu" else "fail"), detail


def baseline_checks(ctx: CheckContext, *, what: str, noise_fix: str = "") -> ev.Scored:
    """``baseline_passes`` and ``timing_noise``: the starting sources judged, timed A/A.

    ``what`` says in the passing detail what was run (``tuning shapes``, ``the task's
    commands``); ``noise_fix``, where the kind times otherwise than aka's engine, the fix
    a failed ``timing_noise`` names in place of the engine's. Returns the baseline's
    score.
    """
    base = ctx.judge(baseline_tree(ctx.ledger.cas, ctx.task), baseline=True, time=True)
    if base.compiled and base.correct:
        ctx.out.add("baseline_passes", "pass", f"compiles and passes on {ctx.device}: {what}")
        status, detail = aa_noise(ctx, base.eval_id)
        ctx.out.add("timing_noise", status, detail, fix=noise_fix)
    else:
        ctx.out.add("baseline_passes", "fail", f"compiled={base.compiled}: {base.error}")
        ctx.out.add("timing_noise", "skip", "the baseline does not pass")
    return base


def py_symbols(source: str) -> set[str]:
    """Top-level and nested function, class and assigned names of a Python source."""
    names: set[str] = set()
    for node in ast.walk(pyast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def targets_check(task: Task, out: TaskValidation) -> None:
    """``targets_exist``: each target is defined in an editable file (or under an editable
    folder, as repository tasks declare them)."""
    spec = task.spec
    src = task.path / spec.source_dir
    texts: dict[str, str] = {}
    for rel in spec.editable:
        path = src / rel
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in files:
            if f.is_file():
                texts[f.relative_to(src).as_posix()] = f.read_text(errors="replace")
    missing = []
    for target in spec.targets:
        found = any(
            target in py_symbols(text)
            if rel.endswith(".py")
            else re.search(rf"\b{re.escape(target)}\s*\(", text)
            for rel, text in texts.items()
        )
        if not found:
            missing.append(target)
    if not spec.targets:
        out.add("targets_exist", "warn", "the task names no target symbols")
    elif missing:
        out.add("targets_exist", "fail", f"not defined in {spec.editable}: {missing}")
    else:
        out.add("targets_exist", "pass", f"{spec.targets}")
