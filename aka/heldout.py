"""Held-out evaluation: do the run's kernels still work on shapes the agent never saw?

``aka heldout RUN`` re-evaluates, on the task's held-out shapes (``shapes.heldout`` on a
GPU, ``shapes.cpu_heldout`` on the CPU), every attempt's final candidate and each task's
baseline (the starting sources, evaluated as a candidate so that the baseline's own
held-out correctness is known). Each evaluation is an ordinary evaluator chain with
purpose ``heldout`` (never an attempt's score: :func:`aka.core.fold` only counts
``final``), closed by a :class:`aka.events.HeldoutEvaluated` event that links it to the
attempt and task. Tasks and baselines are read from the trees the run recorded (their
kind's staged trees, :mod:`aka.kinds`), and judged by the task's kind like every
evaluation. Re-running the command reuses what is recorded.

The report puts each attempt in a quadrant of (baseline correct on held-out, candidate
correct on held-out): ``both_pass``, ``regression`` (the baseline passes, the candidate
does not: the signature of a kernel tuned to the shapes it saw), ``improvement`` and
``both_fail``; per arm it gives the conditional correctness P(candidate correct |
baseline correct), the geometric-mean speedup on tuning and held-out shapes with
bootstrap CIs over tasks, and the generalization gap (tuning over held-out speedup on
attempts correct on both).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from aka import events as ev
from aka import recorder
from aka.core import AttemptState
from aka.eval import EvalRequest, evaluate
from aka.kinds import baseline_tree
from aka.orchestrator import RunContext, open_run, run_state
from aka.tasks import Task, baseline_task
from aka_ledger import Ledger

QUADRANTS = ("both_pass", "regression", "improvement", "both_fail")
"""Quadrant names, in report order."""

ProgressFn = Callable[[str, str], None]


@dataclass(frozen=True)
class HeldoutRow:
    """One attempt's tuning and held-out results.

    ``heldout_correct`` and ``baseline_correct`` are None when the task has no held-out
    shapes on the run's device (the attempt is then left out of every quadrant).
    """

    task: str
    arm: str
    attempt_key: str
    tuning_correct: bool
    tuning_speedup: float | None
    heldout_correct: bool | None
    heldout_speedup: float | None
    baseline_correct: bool | None
    heldout_eval_id: str | None
    error: str | None

    @property
    def quadrant(self) -> str | None:
        """``both_pass``, ``regression``, ``improvement``, ``both_fail`` or None."""
        if self.heldout_correct is None or self.baseline_correct is None:
            return None
        if self.baseline_correct:
            return "both_pass" if self.heldout_correct else "regression"
        return "improvement" if self.heldout_correct else "both_fail"


def _recorded(ledger: Ledger, run_id: str) -> dict[tuple[str, str], tuple[str, ev.Scored]]:
    """(role key, device) -> (eval id, Scored) of held-out evaluations already recorded."""
    envs = ledger.events(run_id=run_id, types=["HeldoutEvaluated", "Scored"])
    scored = {
        e.payload.eval_id: e.payload
        for e in envs
        if isinstance(e.payload, ev.Scored) and e.payload.purpose == "heldout"
    }
    out: dict[tuple[str, str], tuple[str, ev.Scored]] = {}
    for e in envs:
        p = e.payload
        if isinstance(p, ev.HeldoutEvaluated) and p.eval_id in scored:
            key = e.attempt_key if p.role == "candidate" else f"baseline:{p.task}"
            out[(key or "", p.device)] = (p.eval_id, scored[p.eval_id])
    return out


def _evaluate_heldout(
    ledger: Ledger,
    ctx: RunContext,
    task: Task,
    *,
    role: ev.HeldoutRole,
    candidate: str,
    attempt_key: str | None,
    tuning_eval_id: str | None,
) -> tuple[str, ev.Scored]:
    device = ctx.started.device
    req = EvalRequest(
        task=baseline_task(task) if role == "baseline" else task,
        task_tree=ctx.tree(task.key),
        candidate=candidate,
        harness=ctx.started.harness,
        device=device,
        policy=ctx.started.policy,
        timing=ctx.config.timing,
        purpose="heldout",
        heldout=True,
        time=role == "candidate",
    )
    scored = evaluate(ledger, ctx.run_id, attempt_key, req)
    recorder.record(
        ledger,
        ctx.run_id,
        ev.HeldoutEvaluated(
            task=task.key,
            role=role,
            eval_id=scored.eval_id,
            tuning_eval_id=tuning_eval_id,
            candidate=candidate,
            task_tree=req.task_tree,
            device=device,
            shapes=task.spec.shapes.for_device(device, heldout=True),
        ),
        attempt_key=attempt_key,
    )
    return scored.eval_id, scored


def _final(attempt: AttemptState) -> tuple[ev.Scored, str, str | None] | None:
    """The attempt's final Scored, the candidate tree it scored, and its eval id."""
    for t in attempt.tries:
        if t.score is not None and t.candidate is not None:
            return t.score, t.candidate.tree, t.final_eval
    return None


def run_heldout(
    ledger: Ledger, run_id: str, *, force: bool = False, progress: ProgressFn | None = None
) -> list[HeldoutRow]:
    """Evaluate what is missing on held-out shapes, record it, and return one row per attempt.

    Attempts without a final score are skipped (there is no candidate to re-evaluate).
    With ``force`` every evaluation is run again (the newest is reported).
    """
    ctx = open_run(ledger, run_id)
    device = ctx.started.device
    state = run_state(ledger, run_id)
    done = {} if force else _recorded(ledger, run_id)
    rows: list[HeldoutRow] = []
    baselines: dict[str, ev.Scored] = {}
    try:
        for attempt in sorted(state.attempts.values(), key=lambda a: a.planned.order):
            final = _final(attempt)
            if final is None:
                continue
            tuning, tree, tuning_eval = final
            task = ctx.task(attempt.planned.task)
            shapes = task.spec.shapes.for_device(device, heldout=True)
            base = HeldoutRow(
                task=task.key,
                arm=attempt.planned.arm,
                attempt_key=attempt.key,
                tuning_correct=tuning.correct,
                tuning_speedup=tuning.speedup,
                heldout_correct=None,
                heldout_speedup=None,
                baseline_correct=None,
                heldout_eval_id=None,
                error=f"task has no held-out shapes for {device}",
            )
            if not shapes:
                rows.append(base)
                continue
            bkey = (f"baseline:{task.key}", device)
            if task.key not in baselines:
                if progress:
                    progress(task.key, "baseline")
                got = done.get(bkey) or _evaluate_heldout(
                    ledger, ctx, task, role="baseline", candidate=baseline_tree(ledger.cas, task),
                    attempt_key=None, tuning_eval_id=None,
                )  # fmt: skip
                done[bkey] = got
                baselines[task.key] = got[1]
            if progress:
                progress(task.key, attempt.planned.arm)
            eval_id, held = done.get((attempt.key, device)) or _evaluate_heldout(
                ledger, ctx, task, role="candidate", candidate=tree,
                attempt_key=attempt.key, tuning_eval_id=tuning_eval,
            )  # fmt: skip
            rows.append(
                replace(
                    base,
                    heldout_correct=held.correct,
                    heldout_speedup=held.speedup,
                    baseline_correct=baselines[task.key].correct,
                    heldout_eval_id=eval_id,
                    error=held.error,
                )
            )
    finally:
        ctx.tasks.close()
    return rows


@dataclass(frozen=True)
class ArmHeldout:
    """One arm's held-out summary; speedups are geometric means with CIs over tasks.

    Attributes:
        quadrants: attempts per quadrant (:data:`QUADRANTS`).
        conditional_correctness: P(candidate correct on held-out | baseline correct on
            held-out), None when the baseline passed nowhere.
        tuning_speedup / heldout_speedup: geometric mean over tasks of each task's mean
            log-speedup over attempts correct on those shapes.
        gap: tuning over held-out speedup, over attempts correct on both (1.0 = the
            speedup carried over; 1.3 = 30 % of it was specific to the tuning shapes).
    """

    arm: str
    attempts: int
    tasks: int
    quadrants: dict[str, int]
    conditional_correctness: float | None
    tuning_correct_rate: float
    heldout_correct_rate: float | None
    tuning_speedup: float | None
    tuning_ci: tuple[float, float] | None
    heldout_speedup: float | None
    heldout_ci: tuple[float, float] | None
    gap: float | None
    gap_ci: tuple[float, float] | None


def _geo(
    per_task: dict[str, list[float]], *, alpha: float, n_boot: int, seed: int
) -> tuple[float | None, tuple[float, float] | None]:
    """exp(mean over tasks of the task's mean log value), with an expanded bootstrap CI."""
    import numpy as np

    from aka.stats import bootstrap_mean_ci

    means = [sum(v) / len(v) for v in per_task.values() if v]
    if not means:
        return None, None
    est = math.exp(sum(means) / len(means))
    if len(means) < 2:
        return est, None
    lo, hi = bootstrap_mean_ci(means, alpha=alpha, n_boot=n_boot, rng=np.random.default_rng(seed))
    return est, (math.exp(lo), math.exp(hi))


def summarize(
    rows: list[HeldoutRow], *, alpha: float = 0.05, n_boot: int = 2000, seed: int = 0
) -> list[ArmHeldout]:
    """Per-arm quadrants, conditional correctness, speedups and gap. Pure and deterministic."""
    out = []
    for arm in sorted({r.arm for r in rows}):
        mine = [r for r in rows if r.arm == arm]
        judged = [r for r in mine if r.quadrant is not None]
        quads = {q: sum(r.quadrant == q for r in judged) for q in QUADRANTS}
        passable = quads["both_pass"] + quads["regression"]
        tune: dict[str, list[float]] = {}
        held: dict[str, list[float]] = {}
        gap: dict[str, list[float]] = {}
        for r in mine:
            if r.tuning_correct and r.tuning_speedup:
                tune.setdefault(r.task, []).append(math.log(r.tuning_speedup))
            if r.heldout_correct and r.heldout_speedup:
                held.setdefault(r.task, []).append(math.log(r.heldout_speedup))
                if r.tuning_correct and r.tuning_speedup:
                    gap.setdefault(r.task, []).append(
                        math.log(r.tuning_speedup) - math.log(r.heldout_speedup)
                    )
        kw = {"alpha": alpha, "n_boot": n_boot, "seed": seed}
        t_est, t_ci = _geo(tune, **kw)  # type: ignore[arg-type]
        h_est, h_ci = _geo(held, **kw)  # type: ignore[arg-type]
        g_est, g_ci = _geo(gap, **kw)  # type: ignore[arg-type]
        out.append(
            ArmHeldout(
                arm=arm,
                attempts=len(mine),
                tasks=len({r.task for r in mine}),
                quadrants=quads,
                conditional_correctness=quads["both_pass"] / passable if passable else None,
                tuning_correct_rate=sum(r.tuning_correct for r in mine) / len(mine),
                heldout_correct_rate=(
                    sum(bool(r.heldout_correct) for r in judged) / len(judged) if judged else None
                ),
                tuning_speedup=t_est,
                tuning_ci=t_ci,
                heldout_speedup=h_est,
                heldout_ci=h_ci,
                gap=g_est,
                gap_ci=g_ci,
            )
        )
    return out
