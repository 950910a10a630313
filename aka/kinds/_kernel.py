"""Kernel tasks: a reference module judges a callable, in the sealed evaluator's processes.

The default kind: a task folder with ``reference.py`` and starting sources is stored as
it is; an evaluation lays out ``task/`` (the harness side), ``base/`` (the starting
sources) and ``cand/`` (the same with the candidate's editable files) from digests, so
nothing else the agent wrote is there, and :func:`aka.eval._pipeline.run_job` runs the
candidate in its own process and the references in a checker process (docs/security.md).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from aka.eval import (
    EvalRequest,
    Job,
    Verdict,
    current_workers,
    excuse_variants,
    heldout_job,
    keep_excused,
    missed_variants,
    run_job,
    unexcused_shapes,
    with_heldout,
)
from aka.kinds._kernel_checks import reference_checks, static_checks
from aka.kinds._protocol import CheckContext, Stage
from aka.kinds._registry import baseline_tree
from aka.kinds._shared_checks import baseline_checks
from aka.tasks import Task, baseline_task

if TYPE_CHECKING:
    from aka_ledger import Ledger

__all__ = ["COMPILE_BUDGET_S", "KernelKind", "eval_timeout", "hidden_paths", "job_for"]

# What an evaluation may take beyond its timing budgets: process start, imports, the first
# compile of every kernel (Triton, a CUDA extension), correctness calls, the checker.
COMPILE_BUDGET_S = {"cpu": 300.0, "cuda": 600.0}

ZEROS_WRAPPER = """

import torch as _aka_null_torch

_aka_null_original = {symbol}


def {symbol}(*args, **kwargs):
    return _aka_null_torch.zeros_like(_aka_null_original(*args, **kwargs))
"""


def eval_timeout(req: EvalRequest, shapes: list[dict[str, int]]) -> float:
    """The whole-evaluation limit: the run's setting, else the task's, else derived.

    Derived: the compile budget of the device kind, plus per shape four times the timing
    budget (both arms, warm-up, the audited calls) and a minute for its correctness calls.
    """
    if req.timing.eval_timeout_s:
        return float(req.timing.eval_timeout_s)
    if req.task.spec.eval_timeout_s:
        return float(req.task.spec.eval_timeout_s)
    kind = "cuda" if req.device.startswith("cuda") else "cpu"
    per_shape = 4 * req.timing.max_time_s + 60.0
    return COMPILE_BUDGET_S[kind] + len(shapes) * per_shape


def hidden_paths(ledger: Ledger, req: EvalRequest) -> tuple[str, ...]:
    """What the candidate process must not see: the ledger and the whole task suite (the
    one holding the staged task, and the one it was staged from, ``req.hide``).

    The suite is the folder the task's key is relative to when the task sits in one (a
    tasks folder). A task materialized from the content store (``aka run``, ``aka
    resume``) sits alone in a folder named by its digest: walking its key's depth up from
    there would hide the temporary folder (the evaluation's own is in it) or ``/``, so
    its own folder is what is hidden.
    """
    path = req.task.path
    parts = Path(req.task.key).parts
    mirrors = bool(parts) and path.parts[-len(parts) :] == parts
    suite = path.parents[len(parts) - 1] if mirrors else path
    return tuple(str(p) for p in (ledger.root, suite, *req.hide) if p is not None)


def job_for(req: EvalRequest, seed: int, hide: tuple[str, ...] = ()) -> Job:
    """The plain-valued job for a request (the task spec flattened).

    ``hide``: folders the candidate process must not see (the ledger, the task suite).
    """
    spec = req.task.spec
    shapes = spec.shapes.for_device(req.device, heldout=req.heldout)
    switches = current_workers().switches
    return Job(
        reference=spec.reference,
        editable=list(spec.editable),
        forbidden=list(spec.forbidden),
        operators=spec.operators,
        allowed_operators=list(spec.allowed_operators),
        entry_file=spec.entry_file,
        entry_symbol=spec.entry_symbol,
        pass_shape=spec.pass_shape,
        backend=spec.backend,
        shapes=shapes,
        dtypes=list(spec.dtypes),
        tolerances={k: v.model_dump() for k, v in spec.tolerances.items()},
        seeds=spec.seeds,
        device=req.device,
        time=req.time,
        timing=req.timing.model_dump(),
        seed=seed,
        ceilings=req.ceilings,
        timeout_s=eval_timeout(req, shapes),
        hide=hide,
        isolate_network=switches.isolate_network,
        contain=switches.contain,
        drawer=switches.drawer,
        timer=switches.timer,
    )


def _zeros_tree(ctx: CheckContext) -> str | None:
    """The baseline with its entry wrapped to return zeros (when the entry is editable Python)."""
    spec = ctx.task.spec
    if spec.entry_file not in spec.editable or not spec.entry_file.endswith(".py"):
        return None
    src = ctx.task.path / spec.source_dir
    present = [p for p in spec.editable if (src / p).is_file()]
    with tempfile.TemporaryDirectory(prefix="aka-null-") as tmp:
        for rel in present:
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / rel, Path(tmp) / rel)
        entry = Path(tmp) / spec.entry_file
        entry.write_text(entry.read_text() + ZEROS_WRAPPER.format(symbol=spec.entry_symbol))
        return ctx.ledger.cas.snapshot(Path(tmp), paths=present)


def _evaluator_checks(ctx: CheckContext) -> None:
    """The baseline passes (tuning and held-out shapes), times A/A, and zeros are rejected."""
    spec, out, device = ctx.task.spec, ctx.out, ctx.device
    if ("cpu" if device == "cpu" else "cuda") not in spec.devices:
        for name in (
            "baseline_passes",
            "timing_noise",
            "baseline_passes_heldout",
            "null_zeros_evaluated",
        ):
            out.add(
                name,
                "skip",
                f"the task runs on {spec.devices} only, not on {device} "
                f"(validate it with --device {spec.devices[0]})",
            )
        return
    baseline_checks(ctx, what="tuning shapes")
    if any(c.name == "heldout_shapes" and c.status == "pass" for c in out.checks):
        held = ctx.judge(baseline_tree(ctx.ledger.cas, ctx.task), baseline=True, heldout=True)
        ok = held.compiled and held.correct
        out.add("baseline_passes_heldout", "pass" if ok else "fail", "" if ok else str(held.error))
    else:
        out.add("baseline_passes_heldout", "skip", "no valid held-out shapes")
    zeros = _zeros_tree(ctx)
    if zeros is None:
        out.add("null_zeros_evaluated", "skip", "the entry file is not editable Python")
        return
    rejected = not ctx.judge(zeros, baseline=False).correct
    out.add(
        "null_zeros_evaluated",
        "pass" if rejected else "fail",
        "the evaluator rejects a zeros submission"
        if rejected
        else "a zeros submission scored correct",
    )


class KernelKind:
    """The kernel kind (``kind: kernel``, the default): see the module docstring."""

    name = "kernel"
    sealed = True  # the candidate runs alone; the checker and the sealed core decide

    def stage(self, task: Task, dest: Path) -> None:
        """The folder as it is: reference, spec and starting sources."""
        shutil.copytree(task.path, dest, symlinks=True, dirs_exist_ok=True)

    def lay_out(self, ledger: Ledger, req: EvalRequest, dest: Path) -> dict[str, Path]:
        """``task/``, ``base/`` and ``cand/`` under ``dest`` from digests alone."""
        spec = req.task.spec
        task_dir, base, cand = dest / "task", dest / "base", dest / "cand"
        ledger.cas.materialize(req.task_tree, task_dir)
        shutil.copytree(task_dir / spec.source_dir, base)
        shutil.copytree(task_dir / spec.source_dir, cand)
        for rel in spec.editable:
            (cand / rel).unlink(missing_ok=True)
        ledger.cas.materialize(req.candidate, cand, only=spec.editable)
        return {"task": task_dir, "base": base, "cand": cand}

    def judge(self, ledger: Ledger, req: EvalRequest, dest: Path, *, seed: int) -> Verdict:
        """The candidate process, then the checker process (:func:`run_job`); for a scored
        evaluation of a correct candidate, the same again over the held-out shapes.

        A score is a reward: a kernel fitted to the shapes it was shown must score as
        wrong. The held-out shapes are checked in processes of their own, after the tuning
        evaluation, so what the candidate saw there cannot reach what the policy is told
        (:func:`aka.eval.with_heldout`); never timed.
        """
        job = job_for(req, seed, hidden_paths(ledger, req))
        verdict = run_job(job, dest)
        if req.heldout and missed_variants(verdict):  # a held-out re-evaluation or validation
            verdict = excuse_variants(verdict, self._own(ledger, req, dest, seed, None))
            if req.time and verdict.correct:  # the timing the excusal dropped, taken again
                verdict = self._retimed(ledger, req, dest, job, verdict)
        held = req.task.spec.shapes.for_device(req.device, heldout=True) if req.with_heldout else []
        if not held or not verdict.correct:
            return verdict
        checked = run_job(heldout_job(job, held, dest), dest)
        if missed_variants(checked):  # held to no more than the task's own code meets
            checked = excuse_variants(checked, self._own(ledger, req, dest, seed, held))
        return with_heldout(verdict, checked)

    def _retimed(
        self, ledger: Ledger, req: EvalRequest, dest: Path, job: Job, excused: Verdict
    ) -> Verdict:
        """``job`` again, timed, without the shapes whose cases ``excused`` excused, in a
        folder laid out afresh from the digests; its excused cases kept (a failed case
        skips the settling of a timing, so the first run's is not one to keep)."""
        shapes = unexcused_shapes(job.shapes, excused)
        if not shapes:
            return excused
        root = dest / "retimed"
        self.lay_out(ledger, req, root)
        return keep_excused(run_job(replace(job, shapes=shapes), root), excused)

    def _own(
        self, ledger: Ledger, req: EvalRequest, dest: Path, seed: int,
        held: list[dict[str, int]] | None,
    ) -> Verdict:  # fmt: skip
        """The task's starting code judged as the baseline is, with the candidate's seed
        and shapes (the same inputs; ``held``: as its held-out check), untimed, in a folder
        laid out afresh from the task's digest: nothing the candidate's processes could
        reach under ``dest`` is used."""
        root = dest / ("own-heldout" if held is not None else "own")
        task_dir = root / "task"
        ledger.cas.materialize(req.task_tree, task_dir)
        for part in ("base", "cand"):
            shutil.copytree(task_dir / req.task.spec.source_dir, root / part)
        own = replace(req, task=baseline_task(req.task), time=False)
        job = job_for(own, seed, hidden_paths(ledger, req))
        return run_job(heldout_job(job, held, root) if held is not None else job, root)

    def checks(self, ctx: CheckContext) -> list[Stage]:
        """Static, reference-side, then (unless quick) through the evaluator."""
        stages: list[Stage] = [
            ("static", lambda: static_checks(ctx.task, ctx.out)),
            ("reference", lambda: reference_checks(ctx.task, ctx.device, ctx.out)),
        ]
        if not ctx.quick:
            stages.append(("evaluator", lambda: _evaluator_checks(ctx)))
        return stages
