"""The requests the sandboxed processes receive, built from a :class:`Job`.

The candidate process (:mod:`aka.eval._candidate`) and the checker process
(:mod:`aka.eval._checker`) learn what to do only from the request the parent sends them
(:mod:`aka.eval._wire`). What goes into each, and what stays out (the held-out shapes,
seeds and dtypes go to the sealed core in the plan, never to candidate Python), is
decided here, apart from running the processes and merging their findings
(:mod:`aka.eval._pipeline`).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aka.eval import _drawer, _native
from aka.eval._profiling import request_field
from aka.eval._wire import CandidateRequest, CheckerRequest

if TYPE_CHECKING:
    from aka.eval._pipeline import Job

__all__ = ["candidate_request", "checker_request", "task_files"]


def candidate_request(
    job: Job,
    root: Path,
    out: Path,
    native: str,
    profile: Path | None = None,
    host_gate: Path | None = None,
) -> CandidateRequest:
    """The candidate process's request: paths and the probe shape, nothing secret.

    Shapes, seeds and dtypes of the checked and timed calls go to the sealed core in the
    plan; Python in that process learns only the first declared shape, for the
    required-kernel probes (tripwires), and the paths it hides before importing the
    candidate: the task's spec, the output folder, whatever the evaluator names, and the
    evaluators' shared gate folder ``host_gate`` (a candidate that could take its lock,
    which an ``flock`` does on a read-only file, would hold every evaluator sharing it
    out of timing until its own evaluation is killed) and, for the same reason, the lock
    that builds of the evaluation core take (:func:`aka.eval._native.build_lock`).
    """
    drawer = _drawer.wanted(job.device, job.drawer)
    return CandidateRequest(
        eval_root=str(root),
        task_dir=str(root / "task"),
        base_dir=str(root / "base"),
        cand_dir=str(root / "cand"),
        out_dir=str(out),
        reference=job.reference,
        entry_file=job.entry_file,
        entry_symbol=job.entry_symbol,
        pass_shape=job.pass_shape,
        backend=job.backend,
        device=job.device,
        probe_shape=job.shapes[0],
        probe_dtype=job.dtypes[0],
        probe_seed=secrets.randbits(31),
        isolate_network=job.isolate_network,
        native=native,
        # The spec (held-out shapes) is hidden; the rest of the task folder stays, since a
        # task's make_inputs may read its files at call time (imported KernelBench tasks
        # run their problem file per shape).
        hide=[str(root / "task" / "task.yaml"), str(out), *job.hide]
        + ([str(host_gate)] if host_gate else [])
        + ([str(_native.build_lock(native))] if native else []),
        max_file_bytes=job.max_file_bytes,
        max_memory_bytes=job.max_memory_bytes,
        contain=job.contain,
        profile=request_field(profile),
        task_files=_own_task_files(job, root),
        drawer=drawer,
        timer=drawer and job.timer,
    )


def _own_task_files(job: Job, root: Path) -> list[str]:
    """The task's files in the candidate's tree (what is not editable) and every Python
    file of the baseline's: code the candidate may call but not change."""
    if not (root / "cand").is_dir():
        return []
    base = task_files(job, root / "base") if (root / "base").is_dir() else ((), ())
    return sorted({*task_files(job, root / "cand")[0], *base[0], *base[1]})


def checker_request(
    job: Job, root: Path, out: Path, records: list[dict[str, Any]], profile: Path | None = None
) -> CheckerRequest:
    """The checker's request: the reference and the recorded outputs (with digest keys)."""
    return CheckerRequest(
        task_dir=str(root / "task"),
        reference=job.reference,
        out_dir=str(out),
        pass_shape=job.pass_shape,
        tolerances=job.tolerances,
        dtypes=job.dtypes,
        device=job.device,
        records=records,
        native=str(_native.ensure_built(job.device)),
        timed_shapes=job.shapes if job.time else [],
        profile=request_field(profile),
    )


def task_files(job: Job, cand: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The task's own Python sources in the candidate's tree (what is not editable) and the
    candidate's (what is), each by the paths their code objects carry as imported and
    resolved: operators the task's code calls inside a candidate call (a model around the
    kernel) are weighed against its baseline's, never charged outright
    (:mod:`aka.eval._sites`)."""
    editable = {r for r in job.editable if r.endswith(".py")} or {job.entry_file}
    rels = sorted(
        p.relative_to(cand).as_posix() for p in cand.rglob("*.py") if "__pycache__" not in p.parts
    )
    dirs = sorted({str(cand), str(cand.resolve())})
    task = tuple(str(Path(d) / r) for d in dirs for r in rels if r not in editable)
    mine = tuple(str(Path(d) / r) for d in dirs for r in sorted(editable))
    return task, mine
