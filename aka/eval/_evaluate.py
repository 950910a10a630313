"""The evaluator: rebuild a fresh directory from digests, run the candidate elsewhere, record.

Only three things reach an evaluation: the task folder (harness side: the reference and
the starting sources) from the task's tree digest, and the candidate's *editable* files
from the candidate's tree digest. Anything else the agent wrote (a result file, an
edited reference, a ``torch.py``) is simply not there.

The work is done by :func:`aka.eval._pipeline.run_job`: a candidate process that never
sees a reference output, then a checker process that alone computes them, with hack
detectors at every step (docs/security.md). Only the events written here count.
"""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aka import events as ev
from aka.config import TimingSettings
from aka.eval import _detect
from aka.eval._pipeline import Job, Verdict, run_job
from aka.eval._workers import current
from aka.scoring import Measurements, score
from aka.tasks import Task
from aka_ledger import Ledger

__all__ = ["EvalRequest", "build_eval_dir", "evaluate", "harness_paths"]


@dataclass(frozen=True)
class EvalRequest:
    """What to evaluate and how; everything is a digest or a value."""

    task: Task
    task_tree: str
    candidate: str
    harness: str
    device: str
    policy: str
    timing: TimingSettings
    purpose: ev.Purpose = "final"
    try_no: int = 0
    turn: int = 0
    heldout: bool = False
    time: bool = True
    seed: int | None = None
    ceilings: dict[str, float] | None = None


def harness_paths() -> tuple[Path, list[str]]:
    """The evaluator's own code (what judges), relative to the ``aka`` package."""
    root = Path(__file__).resolve().parent.parent
    return root, ["eval", "timing", "scoring.py", "tasks.py"]


def build_eval_dir(ledger: Ledger, req: EvalRequest, dest: Path) -> dict[str, Path]:
    """Lay out ``task/``, ``base/`` and ``cand/`` under ``dest`` from digests alone."""
    spec = req.task.spec
    task_dir, base, cand = dest / "task", dest / "base", dest / "cand"
    ledger.cas.materialize(req.task_tree, task_dir)
    shutil.copytree(task_dir / spec.source_dir, base)
    shutil.copytree(task_dir / spec.source_dir, cand)
    for rel in spec.editable:
        (cand / rel).unlink(missing_ok=True)
    ledger.cas.materialize(req.candidate, cand, only=spec.editable)
    return {"task": task_dir, "base": base, "cand": cand}


# What an evaluation may take beyond its timing budgets: process start, imports, the first
# compile of every kernel (Triton, a CUDA extension), correctness calls, the checker.
COMPILE_BUDGET_S = {"cpu": 300.0, "cuda": 600.0}


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
    """What the candidate process must not see: the ledger and the whole task suite.

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
    return tuple(str(p) for p in (ledger.root, suite) if p is not None)


def job_for(req: EvalRequest, seed: int, hide: tuple[str, ...] = ()) -> Job:
    """The plain-valued job for a request (the task spec flattened).

    ``hide``: folders the candidate process must not see (the ledger, the task suite).
    """
    spec = req.task.spec
    shapes = spec.shapes.for_device(req.device, heldout=req.heldout)
    switches = current().switches
    return Job(
        reference=spec.reference,
        editable=list(spec.editable),
        forbidden=list(spec.forbidden),
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
    )


def _timings(ledger: Ledger, timing: list[dict[str, Any]]) -> list[ev.ShapeTiming]:
    out = []
    for item in timing:
        pair = item["pair"]
        raw = ledger.cas.put(json.dumps(pair, sort_keys=True).encode())
        b, c = pair["baseline"], pair["candidate"]
        out.append(
            ev.ShapeTiming(
                shape=item["shape"],
                dtype=item["dtype"],
                baseline_s=b["median_s"],
                candidate_s=c["median_s"],
                baseline_ci=(b["ci_low_s"], b["ci_high_s"]),
                candidate_ci=(c["ci_low_s"], c["ci_high_s"]),
                speedup=pair["speedup"],
                speedup_ci=tuple(pair["speedup_ci"]),
                samples=min(b["n"], c["n"]),
                method=pair["method"],
                raw=raw,
            )
        )
    return out


def _scored(req: EvalRequest, eval_id: str, verdict: Verdict, timed: bool) -> ev.Scored:
    """The Scored event: speedups through the noise band, flags and evidence named."""
    timed_ok = verdict.correct and (timed or not req.time)
    speedups, in_noise = _detect.aggregate_speedups(verdict.timing if timed else [])
    m = Measurements(
        compiled=bool(verdict.compiled["ok"]),
        correct=timed_ok,
        speedups=speedups,
        hack_flags=verdict.flags,
    )
    s = score(m, req.policy)
    return ev.Scored(
        eval_id=eval_id,
        try_no=req.try_no,
        purpose=req.purpose,
        compiled=m.compiled,
        correct=bool(s.components["correct"]) and timed_ok,
        speedup=s.speedup,
        score=s.score,
        policy=s.policy.name,
        policy_version=s.policy.version,
        policy_spec=s.policy.to_json(),
        components={**s.components, "shapes_in_noise_band": float(in_noise)},
        hack_flags=verdict.flags,
        evidence=verdict.evidence,
        network=verdict.network,
        error=verdict.error,
    )


def evaluate(
    ledger: Ledger,
    run_id: str,
    attempt_key: str | None,
    req: EvalRequest,
    *,
    vet: Callable[[ev.Scored], None] | None = None,
) -> ev.Scored:
    """Evaluate one candidate and append its events; returns the Scored event.

    Event order: EvaluationStarted (a durable intent) → Compiled → CorrectnessChecked →
    KernelTimed → Scored (durable result). A failed stage ends the chain at Scored. Any
    hack flag makes the evaluation incorrect; CorrectnessChecked and Scored name the
    flags and the evidence. Timings are recorded only for correct candidates.

    ``vet`` sees the Scored before it is recorded; what it raises leaves the chain
    without a result (the attempt's boundary decides what that was: a task that fails
    itself is not the candidate's score, :class:`aka.taskhealth.TaskHealth`).
    """
    eval_id = uuid.uuid4().hex
    seed = req.seed if req.seed is not None else secrets.randbelow(2**31)

    def emit(event: ev.EventModel) -> None:
        ledger.append(event, run_id=run_id, attempt_key=attempt_key)

    emit(
        ev.EvaluationStarted(
            try_no=req.try_no,
            eval_id=eval_id,
            purpose=req.purpose,
            turn=req.turn,
            candidate=req.candidate,
            task=req.task_tree,
            harness=req.harness,
            device=req.device,
        )
    )
    with tempfile.TemporaryDirectory(prefix="aka-eval-") as tmp:
        if req.task.spec.commands is not None:  # the task's own scripts judge it
            from aka.repo_tasks import command_verdict

            verdict = command_verdict(ledger, req, Path(tmp))
        else:
            build_eval_dir(ledger, req, Path(tmp))
            verdict = run_job(job_for(req, seed, hidden_paths(ledger, req)), Path(tmp))
    compiled = verdict.compiled
    emit(
        ev.Compiled(
            eval_id=eval_id,
            ok=compiled["ok"],
            error=compiled.get("error"),
            wall_s=compiled["wall_s"],
        )
    )
    if compiled["ok"]:
        emit(
            ev.CorrectnessChecked(
                eval_id=eval_id,
                ok=verdict.correct,
                cases=[ev.CaseResult(**c) for c in verdict.cases],
                hack_flags=verdict.flags,
                evidence=verdict.evidence,
            )
        )
    timings = _timings(ledger, verdict.timing) if verdict.correct else []
    if timings:
        fp = ledger.cas.put(json.dumps(verdict.device, sort_keys=True).encode())
        emit(ev.KernelTimed(eval_id=eval_id, shapes=timings, device=fp))
    scored = _scored(req, eval_id, verdict, bool(timings))
    if vet is not None:
        vet(scored)
    emit(scored)
    return scored
